"""The benchmark and the embedded pair that ships in checkpoints/."""

import json
import os

import pytest

from eagle3 import GenerationConfig, TreeConfig, collect, load_head, load_target, plain_decode, speculative_decode
from eagle3.bench import main as bench_main, read_prompts
from eagle3.checkpoint import EMBEDDED_HEAD, EMBEDDED_TARGET

SUMMARY_FIELDS = {"speedup", "tau", "plain_tokens_per_s", "eagle3_tokens_per_s", "hf_prompt_lookup_tokens_per_s",
                  "exact_match", "acceptance_by_position"}
PROMPT_FIELDS = {"prompt", "plain_ids", "eagle3_ids", "tau", "speedup"}


def run_bench(tmp_path, target, head, *extra):
    out = tmp_path / "bench.json"
    args = ["--target", target, "--draft", head, "--prompts", "assets/prompts/code.jsonl", "--limit", "2",
            "--max-new-tokens", "16", "--depth", "4", "--top-k", "4", "--total-tokens", "12", "--device", "cpu",
            "--json", str(out), *extra]
    assert bench_main(args) == 0
    return json.loads(out.read_text())


def test_shipped_prompts():
    prompts = read_prompts("assets/prompts/code.jsonl")
    assert len(prompts) >= 30 and len(set(prompts)) == len(prompts)


def test_prompt_formats(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a"}\n{"turns": ["b", "c"]}\n')
    assert read_prompts(str(path)) == ["a", "b"]
    path.write_text('{"question": "a"}\n')
    with pytest.raises(ValueError, match="p.jsonl:1: needs a 'prompt'"):
        read_prompts(str(path))


def test_embedded_pair_loads_offline_and_is_lossless():
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    target = load_target(EMBEDDED_TARGET, "cpu", "float32")
    head = load_head(EMBEDDED_HEAD, target)
    assert target.config.model_type == "llama" and head.config.vocab_size == target.vocab_size
    prompt = 'def is_even(n):\n    """Return True if n is even."""\n'
    plain = collect(plain_decode(target, prompt, GenerationConfig(32)))
    spec = collect(speculative_decode(target, head, prompt, TreeConfig(5, 4, 16), GenerationConfig(32)))
    assert spec.output_ids == plain.output_ids
    assert spec.tau > 1.5  # a trained head gets drafts accepted


def test_bench_smoke_on_embedded_pair(tmp_path):
    report = run_bench(tmp_path, EMBEDDED_TARGET, EMBEDDED_HEAD, "--plot", str(tmp_path / "bench.png"))
    assert SUMMARY_FIELDS <= report["summary"].keys()
    assert report["summary"]["exact_match"] is True
    assert len(report["summary"]["acceptance_by_position"]) == 4
    assert len(report["prompts"]) == 2 and all(PROMPT_FIELDS <= row.keys() for row in report["prompts"])
    assert (tmp_path / "bench.png").stat().st_size > 1000


def test_bench_sampled_reports_no_exact_match(tmp_path, model_dirs):
    report = run_bench(tmp_path, *model_dirs, "--temperature", "0.8", "--no-prompt-lookup")
    assert report["summary"]["exact_match"] is None and report["summary"]["hf_prompt_lookup_tokens_per_s"] is None


def test_step_costs_on_a_tiny_shape(tmp_path):
    from eagle3.costs import main as costs_main

    assert costs_main(["--shape", "tiny", "--device", "cpu", "--context", "32", "--repeats", "3",
                       "--json", str(tmp_path / "costs.json")]) == 0
    report = json.load(open(tmp_path / "costs.json"))
    for key in ("plain_step_ms", "draft_first_level_ms", "verify_16_ms", "verify_32_ms", "verify_64_ms"):
        assert report[key] > 0, key
    assert report["target_weight_gb"] > 0 and report["plain_tokens_per_s"] > 0
