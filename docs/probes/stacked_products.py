"""Time spent in the target's linear products, with q/k/v and gate/up stacked into one
product each (eagle3.invariant.SharedInput) and with every layer on its own, for a one-token
step and a 16-token verification, alternated four times; `torch.profiler`'s self time of
oneDNN's products, so the machine's noise outside them does not count.

    PYTHONPATH=. python docs/probes/stacked_products.py [--target checkpoints/smollm2]
"""

import argparse
import statistics

import torch
from torch.profiler import ProfilerActivity, profile

from eagle3.target import load_target

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--target", default="checkpoints/smollm2")
parser.add_argument("--context", type=int, default=300)
args = parser.parse_args()
torch.set_num_threads(2)
target = load_target(args.target, "cpu", "auto")
groups = {m: m.shared_input for m in target.model.modules() if getattr(m, "shared_input", None) is not None}
cache = target.new_cache(args.context + 64)
times = {}
with torch.inference_mode():
    target.forward(torch.randint(0, 1000, (1, args.context)), torch.arange(args.context)[None], cache)
    for n in (1, 16):
        def forward():
            cache.truncate(args.context)
            target.forward(torch.randint(0, 1000, (1, n)), torch.arange(args.context, args.context + n)[None], cache)
        for _ in range(4):
            for stacked in (True, False):
                for m, group in groups.items():
                    m.shared_input = group if stacked else None
                for _ in range(3):
                    forward()
                with profile(activities=[ProfilerActivity.CPU]) as prof:
                    for _ in range(10):
                        forward()
                products = next(e for e in prof.key_averages() if e.key == "mkldnn::_linear_pointwise")
                times.setdefault((n, stacked), []).append(products.self_cpu_time_total / 10 / 1000)
for (n, stacked), runs in sorted(times.items()):
    print(f"{n}-token forward, {'stacked' if stacked else 'separate'}: linear products "
          f"{statistics.median(runs):.2f} ms (runs {' '.join(f'{t:.2f}' for t in runs)})")
