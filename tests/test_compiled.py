"""torch.compile of the decoder layers leaves greedy speculative output unchanged."""

import shutil

import pytest
import torch

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, collect, decode
from eagle3.compiled import compile_decoding
from eagle3.target import exact_bf16
from tests.models import make_head, make_target
from tests.test_invariant import exact_target

needs_compiler = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                    reason="inductor needs a C++ compiler on the CPU")


@needs_compiler
def test_compiled_layers_decode_the_same():
    target = make_target("llama", vocab_size=32, logit_scale=4.0, num_hidden_layers=3)  # each layer compiles apart
    head = make_head(target, draft_vocab_size=24)
    prompt, tree, config = [3, 1, 4, 1, 5, 9, 2, 6], TreeConfig(3, 3, 8), GenerationConfig(20)
    want = collect(decode(target, prompt, HeadDrafter(head, tree), config)).output_ids
    compile_decoding(target, head)
    assert collect(decode(target, prompt, HeadDrafter(head, tree), config)).output_ids == want
    assert collect(decode(target, prompt, None, config)).output_ids == want


@needs_compiler
@pytest.mark.skipif(not exact_bf16(torch.device("cpu")),
                    reason="needs a CPU with exact bfloat16 (AMX, AVX-512 BF16, or AVX2 with the C++ build)")
def test_compiled_bf16_layers_decode_the_same():
    """The CPU bfloat16 path: its prepacked products cannot enter a graph, so they fall back to
    the stock product there (inductor used to fail on them)."""
    torch._dynamo.reset()
    target = exact_target(num_hidden_layers=3)  # the fewest that hold three feature layers
    head = make_head(target, draft_vocab_size=48).to(torch.bfloat16)
    prompt, tree, config = [3, 1, 4, 1, 5, 9, 2, 6], TreeConfig(3, 3, 8), GenerationConfig(8)
    want = collect(decode(target, prompt, None, config)).output_ids
    compile_decoding(target, head)
    assert collect(decode(target, prompt, None, config)).output_ids == want
    assert collect(decode(target, prompt, HeadDrafter(head, tree), config)).output_ids == want


def test_every_layer_fits_in_the_recompile_limit():
    """Each layer's graph is a recompile of one function (they share the code): dynamo's
    default limit of 8 would leave the layers after the eighth uncompiled, without an error."""
    target = make_target("llama", num_hidden_layers=30)
    compile_decoding(target)  # compiles lazily: nothing is traced until a call
    assert torch._dynamo.config.recompile_limit >= 2 * (target.num_layers + 1)
