"""What the two small C++ kernels of a round cost against the ATen ops they replace: the
greedy verdict's argmax (eagle3/csrc/argmax.cpp) over the target's 49,152 logits, for a
one-token step and for a tree's rows, and a draft level's choice of children
(eagle3/csrc/top_children.cpp) over the head's 6,144 draft logits, for a level's root and
a frontier of top_k nodes. Medians of --rounds rounds, microseconds a call.

    PYTHONPATH=. python docs/probes/verdict_kernels.py [--threads 2] [--rounds 7]
"""

import argparse

import torch
from attention_kernel import median_us, timing_setup  # docs/probes/, this file's folder

from eagle3 import tree

VOCAB, DRAFT_VOCAB, TOP_K = 49152, 6144, 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    args, ops = timing_setup(parser)
    generator = torch.Generator().manual_seed(0)
    for rows in (1, 4, 16):
        logits = torch.randn(rows, VOCAB, generator=generator)
        cpp = median_us(lambda: ops.argmax(logits), args.rounds)
        aten = median_us(lambda: logits.argmax(-1), args.rounds)
        print(f"argmax of {rows:2d} x {VOCAB} logits : C++ {cpp:7.1f} us, ATen {aten:7.1f} us ({aten / cpp:.1f}x)")
    d2t = torch.zeros(DRAFT_VOCAB, dtype=torch.long)
    for nodes in (1, TOP_K):
        logits = torch.randn(1, nodes, DRAFT_VOCAB, generator=generator)
        scores = torch.zeros(1, nodes)
        cpp = median_us(lambda: ops.top_children(logits, scores, d2t, TOP_K), args.rounds)
        original = tree.layer_ops
        tree.layer_ops = lambda: None  # tree.top_children's ATen ops
        try:
            aten = median_us(lambda: tree.top_children(logits, scores, d2t, TOP_K), args.rounds)
        finally:
            tree.layer_ops = original
        print(f"children of {nodes} node(s), top_k {TOP_K}   : C++ {cpp:7.1f} us, ATen {aten:7.1f} us ({aten / cpp:.1f}x)")


if __name__ == "__main__":
    main()
