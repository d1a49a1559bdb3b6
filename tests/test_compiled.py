"""torch.compile of the decoder layers leaves greedy speculative output unchanged."""

import shutil

import pytest

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, collect, decode
from eagle3.compiled import compile_decoding
from tests.models import make_head, make_target


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="inductor needs a C++ compiler on the CPU")
def test_compiled_layers_decode_the_same():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    prompt, tree, config = [3, 1, 4, 1, 5, 9, 2, 6], TreeConfig(3, 3, 8), GenerationConfig(20)
    want = collect(decode(target, prompt, HeadDrafter(head, tree), config)).output_ids
    compile_decoding(target, head)
    assert collect(decode(target, prompt, HeadDrafter(head, tree), config)).output_ids == want
    assert collect(decode(target, prompt, None, config)).output_ids == want
