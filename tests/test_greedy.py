"""Greedy speculative decoding equals plain greedy decoding (model.generate) token for token."""

import pytest
import torch

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, collect, decode
from tests.models import make_head, make_target

SETTINGS = [  # (depth, top_k, total_tokens)
    (1, 1, 2),  # depth 1, a chain of one
    (1, 4, 5),
    (4, 1, 5),  # top_k 1: a chain
    (4, 4, 16),
    (6, 3, 60),  # more nodes asked for than the tree can have
    (6, 8, 9),  # wide and deep drafting, a verification budget of one first level
]


def random_prompts(count: int, vocab_size: int, seed: int = 0) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 24, (count,), generator=generator)
    return [torch.randint(0, vocab_size, (int(n),), generator=generator).tolist() for n in lengths]


def reference(target, prompt, max_new_tokens):
    out = target.model.generate(torch.tensor([prompt]), max_new_tokens=max_new_tokens, do_sample=False)
    return out[0, len(prompt):].tolist()


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_greedy_equals_generate(family):
    target = make_target(family, vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    prompts = random_prompts(20, target.vocab_size)
    expected = [reference(target, p, 40) for p in prompts]
    for depth, top_k, total in SETTINGS:
        taus = []
        for prompt, want in zip(prompts, expected):
            result = collect(decode(target, prompt, HeadDrafter(head, TreeConfig(depth, top_k, total)), GenerationConfig(max_new_tokens=40)))
            assert result.output_ids == want, (depth, top_k, total, prompt)
            taus.append(result.tau)
        if top_k > 1 or depth > 1:  # the trees did get drafts accepted, so acceptance paths ran
            assert max(taus) > 1.2, (depth, top_k, total)


def test_tree_larger_than_remaining_budget():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    for prompt in random_prompts(20, target.vocab_size, seed=1):
        for budget in (1, 2, 3, 5):
            result = collect(decode(target, prompt, HeadDrafter(head, TreeConfig(8, 4, 40)), GenerationConfig(max_new_tokens=budget)))
            assert result.output_ids == reference(target, prompt, budget)
            assert result.stop_reason == "max_new_tokens"


def test_plain_decoder_equals_generate():
    target = make_target("qwen3", vocab_size=32)
    for prompt in random_prompts(5, target.vocab_size):
        result = collect(decode(target, prompt, None, GenerationConfig(max_new_tokens=30)))
        assert result.output_ids == reference(target, prompt, 30)


def test_stops_at_eos_and_never_past_it():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    for prompt in random_prompts(20, target.vocab_size, seed=2):
        free_run = reference(target, prompt, 30)
        eos = free_run[len(free_run) // 2]
        target.model.generation_config.eos_token_id = eos
        target.eos_token_ids = frozenset([eos])
        want = reference(target, prompt, 30)
        for events in (decode(target, prompt, HeadDrafter(head, TreeConfig(5, 4, 24)), GenerationConfig(30)),
                       decode(target, prompt, None, GenerationConfig(30))):
            result = collect(events)
            assert result.output_ids == want
            assert result.output_ids.count(eos) == 1 and result.output_ids[-1] == eos
            assert result.stop_reason == "eos"


def test_context_limit_stops_cleanly():
    target = make_target("llama", vocab_size=32, logit_scale=4.0, max_position_embeddings=48)
    head = make_head(target, draft_vocab_size=24)
    for length in (30, 40, 46, 47):
        prompt = random_prompts(1, 32, seed=length)[0] * 48
        prompt = prompt[:length]
        for events in (decode(target, prompt, HeadDrafter(head, TreeConfig(6, 4, 30)), GenerationConfig(100)),
                       decode(target, prompt, None, GenerationConfig(100))):
            result = collect(events)
            assert len(prompt) + len(result.output_ids) == 48
            assert result.stop_reason == "context"
            assert result.output_ids == reference(target, prompt, 48 - length)
    with pytest.raises(ValueError, match="48-token context"):
        collect(decode(target, [1] * 48, HeadDrafter(head, None), GenerationConfig(10)))


@pytest.mark.parametrize("family", ["mistral", "qwen3"])
def test_sliding_window_targets(family):
    extra = {"sliding_window": 6}
    if family == "qwen3":
        extra.update(use_sliding_window=True, max_window_layers=3)
    target = make_target(family, vocab_size=32, logit_scale=4.0, **extra)
    if family == "qwen3":
        assert "sliding_attention" in target.config.layer_types
    head = make_head(target, draft_vocab_size=24)
    for prompt in random_prompts(6, target.vocab_size, seed=3):
        prompt = (prompt * 4)[:20]
        result = collect(decode(target, prompt, HeadDrafter(head, TreeConfig(5, 4, 20)), GenerationConfig(30)))
        assert result.output_ids == reference(target, prompt, 30)


def test_a_float32_cpu_target_multiplies_its_large_products_on_prepacked_weights(monkeypatch, request):
    """Where the C++ float32 product does not multiply (no C++ build; here EAGLE3_PRODUCT=onednn),
    a CPU float32 target's products of at least FLOAT32_PREPACKED_ELEMENTS weights (stacked
    ones counted together) run on oneDNN-prepacked weights (for speed: eagle3.invariant),
    smaller ones stock, and both give the stock logits within float32's rounding."""
    import eagle3.invariant
    from eagle3.invariant import PrepackedLinear, onednn_packs
    from eagle3.native import own_products

    if not onednn_packs(torch.float32):
        pytest.skip("oneDNN packs no float32 weights on this CPU")
    monkeypatch.setenv("EAGLE3_PRODUCT", "onednn")
    own_products.cache_clear()
    request.addfinalizer(own_products.cache_clear)
    target = make_target("llama", vocab_size=32)
    layer = target.layers[0]
    assert type(target.model.lm_head) is PrepackedLinear and layer.mlp.gate_proj.shared_input is not None
    gate_up = layer.mlp.gate_proj.shared_input.elements
    assert gate_up == 2 * layer.mlp.gate_proj.weight.numel() > layer.mlp.down_proj.weight.numel()
    monkeypatch.setattr(eagle3.invariant, "FLOAT32_PREPACKED_ELEMENTS", gate_up)  # stacked gate/up: packed; down: not
    ids = torch.tensor([random_prompts(1, target.vocab_size)[0]])
    with torch.inference_mode():
        prepacked = target.model(ids).logits
        assert layer.mlp.gate_proj.shared_input.weights._key is not None
        assert "_packed" not in layer.mlp.down_proj.__dict__ and "_packed" not in target.model.lm_head.__dict__
        for module in target.model.modules():
            if isinstance(module, PrepackedLinear):
                module.__class__ = torch.nn.Linear
        stock = target.model(ids).logits
    assert torch.allclose(prepacked, stock, rtol=1e-5, atol=1e-5)
