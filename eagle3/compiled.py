"""Optional torch.compile of the hot paths: the target's decoder layers (every plain step and
every verification) and the head's decoder layer (every draft level).

    compile_decoding(target, head)        # or --compile in eagle3.generate / eagle3.bench

The KV cache grows and the trees change size every round, so the layers are compiled for
dynamic shapes; CUDA graphs (mode="reduce-overhead") would need the padded, fixed shapes
this decoder does not use, and are not offered. Off by default: the first calls pay the
compilation, and whether it pays off depends on the device (see the README's GPU notes).
Greedy output is unchanged (tests/test_compiled.py).
"""

from __future__ import annotations

from eagle3.head import Eagle3Head
from eagle3.target import Target


def compile_decoding(target: Target, head: Eagle3Head | None = None, mode: str = "default") -> None:
    """Compile, in place, each decoder layer of the target and the head's one layer."""
    for layer in target.layers:
        layer.compile(dynamic=True, mode=mode)
    if head is not None:
        head.midlayer.compile(dynamic=True, mode=mode)
