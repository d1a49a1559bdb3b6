"""What eagle3.invariant's attention costs a layer, in C++ (eagle3/csrc/attention.cpp: float32
in a fixed order, on a float32 cache) against the float64 one it replaced (two batched
products on a float64 cache, still what runs where the C++ cannot be built): SmolLM2's
shapes (9 query heads on 3 key heads of 64), a cache of --context positions, for a one-token
step and for a 16-node tree under a tree mask. Medians of --rounds rounds, each kernel's
keys and values in the dtype its cache stores; then whether the C++ gives every tree node
the bits of its step.

    PYTHONPATH=. python docs/probes/attention_kernel.py [--context 300] [--threads 2]
"""

import argparse
import statistics
import time

import torch

from eagle3.invariant import float64_attention
from eagle3.native import layer_ops

HEADS, KV_HEADS, DIM, TREE = 9, 3, 64, 16
MASKED = torch.finfo(torch.bfloat16).min


def tree_mask(context: int, generator: torch.Generator) -> torch.Tensor:
    """[1, 1, TREE, context + TREE]: the context, each node's ancestors (a random tree whose
    parents come before their children) and itself."""
    keep = torch.zeros(TREE, context + TREE, dtype=torch.bool)
    keep[:, :context] = True
    for node in range(TREE):
        keep[node, context + node] = True
        if node:
            parent = int(torch.randint(0, node, (), generator=generator))
            keep[node, context:] |= keep[parent, context:]
    return torch.where(keep, 0.0, MASKED).to(torch.bfloat16)[None, None]


def median_us(call, rounds: int, calls: int = 200) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def timing_setup(parser: argparse.ArgumentParser):
    """A kernel probe's common start: --threads and --rounds added to its parser, the
    arguments parsed, torch's threads set -> (args, the built C++ module); exits where
    eagle3.native cannot build it."""
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ops = layer_ops()
    if ops is None:
        raise SystemExit("eagle3.native could not build the C++ kernels here")
    return args, ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--context", type=int, default=300)
    args, ops = timing_setup(parser)
    generator = torch.Generator().manual_seed(0)
    length = args.context + TREE
    keys, values = (torch.randn(1, KV_HEADS, length, DIM, generator=generator) for _ in range(2))
    mask = tree_mask(args.context, generator)
    for queries, name in ((1, "one-token step"), (TREE, f"{TREE}-node tree")):
        query = torch.randn(1, HEADS, queries, DIM, generator=generator).to(torch.bfloat16)
        width = args.context + queries if queries == 1 else length
        step_mask = None if queries == 1 else mask
        k32, v32 = keys[:, :, :width], values[:, :, :width]
        k64, v64 = k32.double(), v32.double()
        cpp = median_us(lambda: ops.attention(query, k32, v32, step_mask, 0.125), args.rounds)
        float64 = median_us(lambda: float64_attention(query, k64, v64, step_mask, 0.125), args.rounds)
        print(f"{name:15s}: C++ {cpp:7.1f} us a layer, float64 {float64:7.1f} us ({float64 / cpp:.1f}x)")
    # Each node against its one-token step: its context and ancestors, contiguous, unmasked.
    query = torch.randn(1, HEADS, TREE, DIM, generator=generator).to(torch.bfloat16)
    together = ops.attention(query, keys, values, mask, 0.125)

    def equals_its_step(node: int) -> bool:
        kept = (mask[0, 0, node] == 0).nonzero()[:, 0]
        alone = ops.attention(query[:, :, node:node + 1], keys[:, :, kept], values[:, :, kept], None, 0.125)
        return torch.equal(together[0, node], alone[0, 0])

    equal = all(equals_its_step(node) for node in range(TREE))
    print(f"every tree node equals its step bit for bit: {equal}")


if __name__ == "__main__":
    main()
