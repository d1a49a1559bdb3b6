"""Heads load and save in the published format; heads that do not fit are refused clearly."""

import json
import os

import pytest
import torch
from safetensors.torch import save_file

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, collect, decode, load_head, save_head
from eagle3.checkpoint import expected_shapes
from tests.models import make_head, make_target


@pytest.fixture(scope="module")
def target():
    return make_target("llama", vocab_size=32, logit_scale=4.0)


def published_config(hidden=64, vocab=32, draft_vocab=24, **extra):
    """A config.json as the reference repo / SpecForge write it."""
    return {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": hidden,
            "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1,
            "vocab_size": vocab, "draft_vocab_size": draft_vocab, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "max_position_embeddings": 2048, "hidden_act": "silu", "torch_dtype": "float32",
            "tie_word_embeddings": False, **extra}


def published_tensors(config: dict, seed=0) -> dict[str, torch.Tensor]:
    """A state dict under the published key names, written by hand from the format's description."""
    from eagle3.head import Eagle3Config

    generator = torch.Generator().manual_seed(seed)
    shapes = expected_shapes(Eagle3Config.from_dict(config))
    tensors = {k: torch.randn(shape, generator=generator) * 0.2 for k, shape in shapes.items()}
    draft_vocab, vocab = config["draft_vocab_size"], config["vocab_size"]
    chosen = torch.randperm(vocab, generator=generator)[:draft_vocab].sort().values
    tensors["d2t"] = chosen - torch.arange(draft_vocab)
    tensors["t2d"] = torch.zeros(vocab, dtype=torch.bool)
    tensors["t2d"][chosen] = True
    return tensors


def write_head(path, config, tensors, bin_format=False):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    if bin_format:
        torch.save(tensors, os.path.join(path, "pytorch_model.bin"))
    else:
        save_file(tensors, os.path.join(path, "model.safetensors"))
    return str(path)


def test_save_load_roundtrip_is_bit_exact(tmp_path, target):
    head = make_head(target, draft_vocab_size=24)
    head.config.aux_layer_ids = (1, 3, 4)
    save_head(head, str(tmp_path / "head"))
    loaded = load_head(str(tmp_path / "head"), target, dtype=None)
    original, reloaded = head.state_dict(), loaded.state_dict()
    assert original.keys() == reloaded.keys()
    for key in original:
        assert original[key].dtype == reloaded[key].dtype and torch.equal(original[key], reloaded[key]), key
    assert loaded.config == head.config
    assert target.aux_layer_ids == (1, 3, 4)
    target.set_aux_layers((2, 3, 3))
    saved = json.load(open(tmp_path / "head" / "config.json"))
    assert saved["architectures"] == ["LlamaForCausalLMEagle3"] and saved["draft_vocab_size"] == 24
    assert saved["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [0, 2, 3]  # SpecForge / SGLang: layer outputs
    assert saved["eagle_aux_hidden_state_layer_ids"] == [1, 3, 4]  # vLLM: layer inputs


@pytest.mark.parametrize("variant", ["safetensors", "bin", "vllm_names", "own_embedding", "identity_vocab"])
def test_published_state_dict_loads_and_decodes(tmp_path, target, variant):
    config = published_config(draft_vocab=32 if variant == "identity_vocab" else 24)
    tensors = published_tensors(config)
    if variant == "vllm_names":
        tensors = {k.replace("midlayer.", "layers.0."): v for k, v in tensors.items()}
    if variant == "own_embedding":
        tensors["embed_tokens.weight"] = torch.randn(32, 64)
    if variant == "identity_vocab":
        del tensors["d2t"], tensors["t2d"]
    path = write_head(tmp_path / variant, config, tensors, bin_format=variant == "bin")
    head = load_head(path, target)
    assert head.config.architecture == "LlamaForCausalLMEagle3"
    assert torch.equal(head.fc.weight, published_tensors(config)["fc.weight"].to(head.fc.weight.dtype))
    assert (head.embed_tokens is not None) == (variant == "own_embedding")
    prompt = [1, 2, 3, 4]
    result = collect(decode(target, prompt, HeadDrafter(head, TreeConfig(4, 3, 12)), GenerationConfig(20)))
    want = target.model.generate(torch.tensor([prompt]), max_new_tokens=20, do_sample=False)[0, 4:].tolist()
    assert result.output_ids == want


@pytest.mark.parametrize("mutate,message", [
    (lambda c, t: c.update(hidden_size=48), "hidden_size"),
    (lambda c, t: c.update(vocab_size=40), "vocab_size: the head has 40, the target has 32"),
    (lambda c, t: c.update(target_hidden_size=96), "target_hidden_size: the head has 96, the target has 64"),
    (lambda c, t: c.update(architectures=["GPT2LMHeadModel"]), "architectures: 'GPT2LMHeadModel'"),
    (lambda c, t: c.update(num_hidden_layers=2), "num_hidden_layers"),
    (lambda c, t: c.update(eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 3, 8]}), "eagle_aux_hidden_state_layer_ids"),
    (lambda c, t: c.update(eagle_aux_hidden_state_layer_ids=[1, 3, 4], eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 3, 4]}),
     "they must name the same layers"),
    (lambda c, t: t.pop("midlayer.self_attn.q_proj.weight"), r"missing key\(s\) midlayer.self_attn.q_proj.weight"),
    (lambda c, t: t.pop("d2t"), r"missing key\(s\) d2t"),
    (lambda c, t: t.update({"fc.weight": torch.zeros(64, 100)}), r"fc.weight: shape \[64, 100\] in the checkpoint, \[64, 192\]"),
    (lambda c, t: t.update({"extra.weight": torch.zeros(3)}), "unexpected key"),
    (lambda c, t: t.update({"d2t": torch.full((24,), 40)}), "d2t: maps draft ids outside"),
])
def test_mismatched_heads_are_refused(tmp_path, target, mutate, message):
    config = published_config()
    tensors = published_tensors(config)
    mutate(config, tensors)
    sizes = ("hidden_size", "vocab_size", "target_hidden_size")
    if any(config.get(k) != published_config().get(k) for k in sizes):
        tensors = published_tensors(config)  # a consistent head that was made for another target
    path = write_head(tmp_path / "head", config, tensors)
    with pytest.raises(ValueError, match=message):
        load_head(path, target)


def test_missing_truncated_and_corrupt_files(tmp_path, target):
    with pytest.raises(FileNotFoundError, match="nowhere' does not exist"):
        load_head(str(tmp_path / "nowhere"), target)
    (tmp_path / "a_file").write_text("")
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_head(str(tmp_path / "a_file"), target)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_head(str(empty), target)
    config = published_config()
    path = write_head(tmp_path / "head", config, published_tensors(config))
    weights = os.path.join(path, "model.safetensors")
    data = open(weights, "rb").read()
    open(weights, "wb").write(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_head(path, target)
    os.remove(weights)
    with pytest.raises(FileNotFoundError, match="neither model.safetensors nor pytorch_model.bin"):
        load_head(path, target)
    open(os.path.join(path, "config.json"), "w").write("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_head(path, target)


def test_pickle_payloads_are_not_executed(tmp_path, target):
    """pytorch_model.bin is read with weights_only=True: arbitrary objects are refused."""
    config = published_config()
    path = write_head(tmp_path / "head", config, published_tensors(config), bin_format=True)

    class Payload:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))

    torch.save({"fc.weight": Payload()}, os.path.join(path, "pytorch_model.bin"))
    with pytest.raises(ValueError, match="holds more than tensors"):
        load_head(path, target)
    assert not (tmp_path / "pwned").exists()


def test_a_bfloat16_head_keeps_float32_rope(tmp_path, target):
    """Published heads are trained with float32 RoPE: casting the head leaves its frequencies."""
    config = published_config()
    path = write_head(tmp_path / "head", config, published_tensors(config))
    head = load_head(path, target, dtype="bfloat16")
    assert head.fc.weight.dtype == torch.bfloat16
    dim = config["hidden_size"] // config["num_attention_heads"]
    want = 1.0 / (config.get("rope_theta", 10000.0) ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
    assert head.rotary.inv_freq.dtype == torch.float32 and torch.allclose(head.rotary.inv_freq, want)


def test_a_bfloat16_linear_multiplies_stock_where_onednn_packs_none(monkeypatch):
    """On an AVX2-only CPU oneDNN refuses to reorder bfloat16 weights: without the C++ product
    (EAGLE3_PRODUCT=onednn) the product is the stock one there, not a crash."""
    import eagle3.invariant
    from eagle3.invariant import PrepackedLinear
    from eagle3.native import own_products

    monkeypatch.setattr(eagle3.invariant, "onednn_packs", lambda dtype: False)
    monkeypatch.setenv("EAGLE3_PRODUCT", "onednn")
    own_products.cache_clear()
    try:
        layer = torch.nn.Linear(16, 8, dtype=torch.bfloat16).requires_grad_(False)
        layer.__class__ = PrepackedLinear
        x = torch.randn(3, 16, dtype=torch.bfloat16)
        assert torch.equal(layer(x), torch.nn.functional.linear(x, layer.weight, layer.bias))
        assert "_packed" not in layer.__dict__
    finally:
        own_products.cache_clear()


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_a_head_multiplies_on_prepacked_weights_and_still_trains(tmp_path, target, dtype, monkeypatch):
    import eagle3.invariant
    from eagle3.invariant import PrepackedLinear, onednn_packs
    from eagle3.native import own_products

    if not onednn_packs(getattr(torch, dtype)) and own_products(getattr(torch, dtype)) is None:
        pytest.skip(f"neither oneDNN nor the C++ product packs {dtype} weights on this CPU")
    monkeypatch.setattr(eagle3.invariant, "FLOAT32_PREPACKED_ELEMENTS", 0)  # this head's float32 products are small
    config = published_config()
    head = load_head(write_head(tmp_path / "head", config, published_tensors(config)), target, dtype=dtype)
    assert all(type(m) is PrepackedLinear for m in head.modules() if isinstance(m, torch.nn.Linear))
    x = torch.randn(5, head.fc.in_features, dtype=getattr(torch, dtype))
    with torch.no_grad():
        prepacked = head.fc(x)
    assert getattr(head.fc, "_packed", None) is not None  # on oneDNN's or the C++ product's layout, made once
    stock = torch.nn.functional.linear(x, head.fc.weight)
    assert torch.allclose(prepacked.float(), stock.float(), rtol=1e-2, atol=1e-2)
    # With gradients wanted, the stock product runs, and the next packed product follows the new weights.
    head.fc(x).float().sum().backward()
    assert head.fc.weight.grad is not None
    with torch.no_grad():
        head.fc.weight.mul_(2)
        assert torch.allclose(head.fc(x).float(), 2 * prepacked.float(), rtol=2e-2, atol=2e-2)
