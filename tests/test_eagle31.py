"""EAGLE 3.1 heads: the two norms do what the engines that read them do, the files carry
them in the engines' names, decoding with such a head stays exact, and the trainer makes one."""

import json

import pytest
import torch

from eagle3 import GenerationConfig, TreeConfig, collect, decode, drafter_named, load_head, save_head
from eagle3.export import main as export_main
from eagle3.train import main as train_main
from tests.models import make_head, make_target
from tests.test_export import read

FC_NORM_KEYS = {f"fc_norm.{i}.weight" for i in range(3)}


@pytest.fixture(scope="module")
def target():
    return make_target("llama", vocab_size=32, logit_scale=4.0)


def eagle31_head(target):
    head = make_head(target, draft_vocab_size=24, fc_norm=True, norm_output=True)
    with torch.no_grad():  # weights away from 1, so that a norm taken twice shows
        for norm in (*head.fc_norm, head.norm):
            norm.weight.uniform_(0.5, 1.5)
    return head


def test_fc_norm_normalises_each_feature_and_norm_output_feeds_the_normed_state(target):
    head = eagle31_head(target)
    torch.manual_seed(0)
    features = torch.randn(1, 5, 3 * target.hidden_size)
    scaled = features.clone()
    scaled[..., target.hidden_size : 2 * target.hidden_size] *= 40.0  # the mid feature, 40 times larger
    torch.testing.assert_close(head.project(scaled), head.project(features))  # each feature's scale is its own
    plain = make_head(target, draft_vocab_size=24)
    assert not torch.allclose(plain.project(scaled), plain.project(features))

    hidden, tokens, positions = head.project(features), torch.randint(0, 32, (1, 5)), torch.arange(5)[None]
    out = head(hidden, tokens, positions)
    head.config.norm_output = False
    raw = head(hidden, tokens, positions)
    head.config.norm_output = True
    torch.testing.assert_close(out, head.norm(raw))  # the step's output is taken after the final norm
    torch.testing.assert_close(head.logits(out), head.lm_head(out))  # and lm_head reads it as it is


def test_files_carry_the_norms_for_each_engine(tmp_path, target):
    head = eagle31_head(target)
    save_head(head, str(tmp_path / "head"))
    config = json.load(open(tmp_path / "head" / "config.json"))
    assert config["fc_norm"] is True and config["norm_output"] is True
    loaded = load_head(str(tmp_path / "head"), target, dtype=None)
    assert loaded.config == head.config
    for key, value in head.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[key]), key
    for engine in ("vllm", "sglang"):
        assert export_main(["--to", engine, "--head", str(tmp_path / "head"), "--out", str(tmp_path / engine)]) == 0
        config, tensors = read(tmp_path / engine)
        assert config["fc_norm"] is True and config["norm_output"] is True
        assert FC_NORM_KEYS <= tensors.keys()  # top-level, like fc.weight: both engines name them so
        assert all(tuple(tensors[k].shape) == (target.hidden_size,) for k in FC_NORM_KEYS)
    save_head(make_head(target, draft_vocab_size=24), str(tmp_path / "eagle3"))
    config = json.load(open(tmp_path / "eagle3" / "config.json"))  # an EAGLE-3 head's files are unchanged
    assert "fc_norm" not in config and "norm_output" not in config


def test_greedy_speculative_equals_plain_with_an_eagle31_head(target):
    head = eagle31_head(target)
    generator = torch.Generator().manual_seed(4)
    config = GenerationConfig(max_new_tokens=32)
    for _ in range(4):
        prompt = torch.randint(0, 32, (int(torch.randint(3, 20, (), generator=generator)),), generator=generator).tolist()
        plain = collect(decode(target, prompt, None, config)).output_ids
        for drafter in ("eagle3", "hybrid"):
            assert collect(decode(target, prompt, drafter_named(drafter, head, TreeConfig(3, 3, 8)), config)).output_ids == plain


def test_the_trainer_makes_an_eagle31_head(tmp_path, tokenizer, capsys):
    model = make_target("llama", vocab_size=len(tokenizer), eos=tokenizer.eos_token_id).model
    model.save_pretrained(tmp_path / "target")
    tokenizer.save_pretrained(tmp_path / "target")
    with open(tmp_path / "data.jsonl", "w") as f:
        for i in range(8):
            f.write(json.dumps({"text": f"def f{i}(x):\n    return x + {i}\n"}) + "\n")
    args = ["--target", str(tmp_path / "target"), "--data", str(tmp_path / "data.jsonl"), "--draft-vocab-size", "60",
            "--batch-size", "4", "--ttt-steps", "2", "--device", "cpu", "--max-steps", "2"]
    assert train_main(args + ["--out", str(tmp_path / "head"), "--work", str(tmp_path / "work"), "--eagle-3.1"]) == 0
    config = json.load(open(tmp_path / "head" / "config.json"))
    assert config["fc_norm"] is True and config["norm_output"] is True
    assert train_main(args + ["--out", str(tmp_path / "plain"), "--work", str(tmp_path / "work-plain")]) == 0
    refused = ["--out", str(tmp_path / "more"), "--work", str(tmp_path / "work-more"), "--init", str(tmp_path / "plain")]
    assert train_main(args + refused + ["--eagle-3.1"]) == 2
    assert "has no EAGLE 3.1 norms" in capsys.readouterr().err
