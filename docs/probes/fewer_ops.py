"""What eagle3.decoder_layer's lean forward saves on a bfloat16 plain step: the real target's
one-token step through transformers' own decoder layers (eagle3.invariant's arithmetic)
against the same step through the lean ones, which compute the same bits with fewer
dispatches. Interleaved, medians of --rounds rounds of 20 steps after a 300-token prefill;
the logits must be equal bit for bit. Then the op calls a step dispatches (profiler).

    PYTHONPATH=. python docs/probes/fewer_ops.py [--rounds 12]
"""

import argparse
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from eagle3.decoder_layer import use_lean_layers
from eagle3.target import load_target

CONTEXT, STEPS = 300, 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="checkpoints/smollm2")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    target = load_target(args.target, "cpu", "bfloat16")
    cache = target.new_cache(CONTEXT + STEPS + 1)
    target.forward(torch.randint(0, 1000, (1, CONTEXT)), torch.arange(CONTEXT)[None], cache, logits_to_keep=1)

    def run(lean: bool) -> list[torch.Tensor]:
        use_lean_layers(target.model, lean)
        cache.truncate(CONTEXT)
        return [target.forward(torch.tensor([[5 + i]]), torch.tensor([[CONTEXT + i]]), cache, logits_to_keep=1).logits
                for i in range(STEPS)]

    print("lean layers' logits equal the stock layers':", all(map(torch.equal, run(True), run(False))))
    times = {False: [], True: []}
    for i in range(args.rounds):
        for lean in ((False, True) if i % 2 == 0 else (True, False)):
            start = time.perf_counter()
            run(lean)
            times[lean].append((time.perf_counter() - start) / STEPS * 1e3)
    for lean, values in times.items():
        name = "lean layers" if lean else "transformers' layers"
        print(f"{name:21} step: median {statistics.median(values):5.1f} ms (fastest round {min(values):5.1f})")
    for lean in times:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run(lean)
        print(f"{'lean' if lean else 'stock'}: {sum(e.count for e in prof.key_averages()) / STEPS:.0f} op calls a step")


if __name__ == "__main__":
    main()
