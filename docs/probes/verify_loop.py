"""A verification of n nodes after a context, repeated: its time a call, and a loop to profile
with `perf record` (the C++ layer's kernels, which torch.profiler does not see inside), on
random weights of SmolLM2's shapes in bfloat16, as eagle3.costs measures them.

    PYTHONPATH=. perf record -g -o perf16.data python docs/probes/verify_loop.py --nodes 16 --context 512
    perf report -i perf16.data --no-children -n --sort symbol -g none
"""

import argparse
import time

import torch

from eagle3.budget import verify_step
from eagle3.costs import random_pair


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=100)
    args = parser.parse_args()
    target, _ = random_pair("smollm2-135m", torch.device("cpu"), torch.bfloat16)
    with torch.inference_mode():
        cache = target.new_cache(args.context + args.nodes)
        ids = torch.randint(0, target.vocab_size, (1, args.context))
        target.forward(ids, torch.arange(args.context)[None], cache, logits_to_keep=1, capture=True)
        run = verify_step(target, cache, ids, args.context, args.nodes)
        for _ in range(5):
            run()
        start = time.perf_counter()
        for _ in range(args.repeats):
            run()
    print(f"{args.nodes} nodes after {args.context} tokens: {(time.perf_counter() - start) / args.repeats * 1e3:.1f} ms a call")


if __name__ == "__main__":
    main()
