"""Optional torch.compile of the hot paths: the target's decoder layers (every plain step and
every verification) and the head's decoder layer (every draft level).

    compile_decoding(target, head)        # or --compile in eagle3.generate / eagle3.bench

The KV cache grows and the trees change size every round, so the layers are compiled for
dynamic shapes; CUDA graphs (mode="reduce-overhead") would need the padded, fixed shapes
this decoder does not use, and are not offered. Off by default: the first calls pay the
compilation, and whether it pays off depends on the device: on a CPU in bfloat16 it does not,
since a graph cannot take the prepacked weights of eager decoding (eagle3.invariant;
docs/results.md). Greedy output is unchanged (tests/test_compiled.py).
"""

from __future__ import annotations

import torch

from eagle3.head import Eagle3Head
from eagle3.target import Target


def compile_decoding(target: Target, head: Eagle3Head | None = None, mode: str = "default") -> None:
    """Compile, in place, each decoder layer of the target and the head's one layer."""
    # The layers share one code object, and each one's graph is specialised on its layer index
    # (it reads its own cache layer): dynamo counts them as recompiles of one function, and at
    # its default limit of 8 the other layers would silently run uncompiled.
    limit = 4 * (len(target.layers) + 1)
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, limit)
    torch._dynamo.config.accumulated_recompile_limit = max(torch._dynamo.config.accumulated_recompile_limit, 4 * limit)
    for layer in target.layers:
        layer.compile(dynamic=True, mode=mode)
    if head is not None:
        head.midlayer.compile(dynamic=True, mode=mode)
