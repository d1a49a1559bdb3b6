"""Export to vLLM and SGLang: the files each engine expects (names, shapes, config fields), and a round trip."""

import json
import os

import pytest
import torch
from safetensors import safe_open

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, collect, decode
from eagle3.checkpoint import expected_shapes, load_head, save_head
from eagle3.export import main as export_main
from tests.models import make_head, make_target

LAYER_KEYS = {"hidden_norm.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
              "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
              "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    target = make_target("llama", vocab_size=32)  # 6 layers
    head = make_head(target, draft_vocab_size=24)
    head.config.aux_layer_ids = (1, 3, 4)  # inputs of layers 1, 3, 4: outputs of layers 0, 2, 3
    save_head(head, str(root / "head"))
    for engine in ("vllm", "sglang"):
        assert export_main(["--to", engine, "--head", str(root / "head"), "--out", str(root / engine)]) == 0
    return target, head, root


def read(directory):
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    with safe_open(os.path.join(directory, "model.safetensors"), framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    return config, tensors


@pytest.mark.parametrize("engine, prefix", [("vllm", "layers.0."), ("sglang", "midlayer.")])
def test_files_match_what_the_engine_reads(exported, engine, prefix):
    _, head, root = exported
    config, tensors = read(root / engine)
    assert config["architectures"] == ["LlamaForCausalLMEagle3"] and config["model_type"] == "llama"
    assert config["num_hidden_layers"] == 1 and config["draft_vocab_size"] == 24 and config["vocab_size"] == 32
    assert config["target_hidden_size"] == head.config.hidden_size
    if engine == "vllm":  # a top-level list of layer inputs; vLLM does not read eagle_config's list
        assert config["eagle_aux_hidden_state_layer_ids"] == [1, 3, 4] and "eagle_config" not in config
    else:  # eagle_config's list of layer outputs, to which SGLang adds 1
        assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [0, 2, 3]
        assert "eagle_aux_hidden_state_layer_ids" not in config
    shapes = {k.replace("midlayer.", prefix): v for k, v in expected_shapes(head.config).items()}
    assert {k for k in tensors if k.startswith(prefix)} == {prefix + k for k in LAYER_KEYS}
    assert not any(k.startswith("model.") for k in tensors)  # vLLM adds the prefix itself
    for key, shape in shapes.items():
        assert tuple(tensors[key].shape) == shape, key
    assert tensors["d2t"].dtype == torch.int64 and tensors["d2t"].shape == (24,)  # offsets, as both engines take them
    # draft id i + d2t[i] is the i-th token of the draft vocabulary, in the order t2d marks them
    assert torch.equal(torch.arange(24) + tensors["d2t"], head.t2d.nonzero().squeeze(1))


def test_round_trip_decodes_the_same(exported):
    target, head, root = exported
    prompt = [3, 1, 4, 1, 5, 9, 2, 6]
    want = collect(decode(target, prompt, HeadDrafter(load_head(str(root / "head"), target, dtype=None), TreeConfig(3, 3, 8)), GenerationConfig(16)))
    for engine in ("vllm", "sglang"):
        loaded = load_head(str(root / engine), target, dtype=None)
        assert target.aux_layer_ids == (1, 3, 4)  # both conventions read back to the same layers
        for key, value in head.state_dict().items():
            assert torch.equal(loaded.state_dict()[key], value), (engine, key)
        got = collect(decode(target, prompt, HeadDrafter(loaded, TreeConfig(3, 3, 8)), GenerationConfig(16)))
        assert got.output_ids == want.output_ids and got.accepted_per_round == want.accepted_per_round


def test_embeddings_cannot_be_exported_to_sglang(tmp_path):
    target = make_target("llama", vocab_size=32)
    head = make_head(target, draft_vocab_size=24)
    head.config.aux_layer_ids = (0, 3, 4)
    save_head(head, str(tmp_path / "head"))
    assert export_main(["--to", "sglang", "--head", str(tmp_path / "head"), "--out", str(tmp_path / "out")]) == 2
    assert export_main(["--to", "vllm", "--head", str(tmp_path / "head"), "--out", str(tmp_path / "out")]) == 0


def test_a_full_vocabulary_head_has_no_maps_for_vllm(tmp_path):
    """vLLM has no draft_id_to_target_id when draft and target vocabularies are one
    (llama_eagle3.py) and refuses a file that carries d2t; SGLang reads it either way."""
    target = make_target("llama", vocab_size=32)
    head = make_head(target, draft_vocab_size=32)
    save_head(head, str(tmp_path / "head"))
    keys = {}
    for engine in ("vllm", "sglang"):
        assert export_main(["--to", engine, "--head", str(tmp_path / "head"), "--out", str(tmp_path / engine)]) == 0
        keys[engine] = set(read(tmp_path / engine)[1])
        loaded = load_head(str(tmp_path / engine), target, dtype=None)
        assert torch.equal(loaded.d2t, torch.zeros(32, dtype=torch.long)) and bool(loaded.t2d.all())
    sglang = {key.replace("midlayer.", "layers.0.") for key in keys["sglang"]}
    assert sglang - keys["vllm"] == {"d2t", "t2d"} and keys["vllm"] < sglang
