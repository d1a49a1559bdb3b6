"""The benchmark and the embedded pair that ships in checkpoints/."""

import json
import os
import re

import pytest

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, collect, decode, load_head, load_target
from eagle3.bench import main as bench_main
from eagle3.budget import MEASURED_NODES
from eagle3.checkpoint import EMBEDDED_HEAD, EMBEDDED_TARGET, ROOT, shown_path
from eagle3.prompts import read_prompts
from tests.models import make_target

SUMMARY_FIELDS = {"speedup", "tau", "plain_tokens_per_s", "eagle3_tokens_per_s", "hf_prompt_lookup_tokens_per_s",
                  "exact_match", "acceptance_by_position"}
PROMPT_FIELDS = {"prompt", "prompt_ids", "category", "plain_ids", "eagle3_ids", "tau", "speedup"}


def run_bench(tmp_path, target, head, *extra, prompts="assets/prompts/code.jsonl"):
    out = tmp_path / "bench.json"
    args = ["--target", target, "--draft", head, "--prompts", prompts, "--limit", "2",
            "--max-new-tokens", "16", "--depth", "4", "--top-k", "4", "--total-tokens", "12", "--device", "cpu",
            "--json", str(out), *extra]
    assert bench_main(args) == 0
    return json.loads(out.read_text())


def test_shipped_prompts():
    prompts = [r.first for r in read_prompts("assets/prompts/code.jsonl")]
    assert len(prompts) >= 30 and len(set(prompts)) == len(prompts)


def test_bench_records_the_ids_it_decoded_and_a_table_by_category(tmp_path, model_dirs):
    from transformers import AutoTokenizer

    prompts = tmp_path / "chat.jsonl"
    prompts.write_text('{"question_id": 1, "category": "math", "turns": ["def add(a, b):"]}\n'
                       '{"question_id": 2, "category": "coding", "turns": ["for i in range(3):", "more"]}\n'
                       '{"question_id": 3, "category": "math", "turns": ["class Point:"]}\n')
    report = run_bench(tmp_path, *model_dirs, "--limit", "3", prompts=str(prompts))
    tokenizer = AutoTokenizer.from_pretrained(model_dirs[0])
    rows = report["prompts"]
    assert [r["category"] for r in rows] == ["math", "coding", "math"]
    assert [r["prompt_ids"] for r in rows] == [tokenizer(t).input_ids for t in ("def add(a, b):", "for i in range(3):", "class Point:")]
    assert set(report["categories"]) == {"math", "coding"} and report["categories"]["math"]["prompts"] == 2
    math = [r for r in rows if r["category"] == "math"]
    expected = sum(r["plain_s"] for r in math) / sum(r["eagle3_s"] for r in math)
    assert report["categories"]["math"]["speedup"] == pytest.approx(expected, rel=1e-3)
    assert report["settings"]["target"] == model_dirs[0] and report["settings"]["chat"] is False
    # The CPU is named with what decides its arithmetic, since results differ between CPU kinds
    assert re.fullmatch(r".+ \((AMX|AVX-512 BF16|[A-Z0-9_]+), \d+ cores\)", report["settings"]["device_name"])
    assert all(r["hf_generate_matches"] for r in rows)  # same ids, same greedy tokens as transformers
    # The project's own lookup drafter and the hybrid, timed on the same prompts in the same run
    drafters = report["summary"]["drafters"]
    assert set(drafters) == {"lookup", "hybrid"} and all(d["exact_match"] for d in drafters.values())
    assert all(r["lookup_ids"] == r["plain_ids"] == r["hybrid_ids"] for r in rows)
    hybrid = sum(r["plain_s"] for r in math) / sum(r["hybrid_s"] for r in math)
    assert report["categories"]["math"]["hybrid_speedup"] == pytest.approx(hybrid, rel=1e-3)
    # By default each round's tree is cut by the measured costs, which the settings record
    assert report["settings"]["node_budget"] == "measured" and [int(n) for n in report["settings"]["verify_ms"]][0] == 1
    assert 1 <= report["summary"]["nodes_per_round"] <= 12 and all(1 <= d["nodes_per_round"] <= 12 for d in drafters.values())


def test_repeats_time_each_decoder_by_its_median(tmp_path, model_dirs, capsys):
    report = run_bench(tmp_path, *model_dirs, "--repeats", "3", "--no-prompt-lookup", "--drafters", "hybrid",
                       "--node-budget", "fixed")
    assert report["settings"]["repeats"] == 3 and report["settings"]["node_budget"] == "fixed"
    assert "verify_ms" not in report["settings"]
    for row in report["prompts"]:
        runs = row["seconds_by_repeat"]
        assert set(runs) == {"plain", "eagle3", "hybrid", "hf_generate"} and all(len(t) == 3 for t in runs.values())
        for name in ("plain", "eagle3", "hybrid", "hf_generate"):
            assert row[f"{name}_s"] == pytest.approx(sorted(runs[name])[1], abs=1e-4)
        half = 5e-5  # the JSON's rounding
        low = (row["plain_s"] - half) / (row["eagle3_s"] + half) - half
        assert low <= row["speedup"] <= (row["plain_s"] + half) / (row["eagle3_s"] - half) + half  # of the medians
    assert bench_main(["--target", model_dirs[0], "--draft", model_dirs[1], "--repeats", "0"]) == 2
    assert "--repeats: 0 is below 1" in capsys.readouterr().err


def test_the_depth_sweep_times_each_depth_and_the_adaptive_policy(tmp_path, model_dirs):
    report = run_bench(tmp_path, *model_dirs, "--sweep", "depth=1..2", "--adaptive", "--skip-main")
    sweep = report["sweep"]
    assert [v["variant"] for v in sweep["variants"]] == ["depth=1", "depth=2", "adaptive"]
    assert all(v["speedup"] > 0 and v["tau"] >= 1 for v in sweep["variants"])
    assert sweep["best_fixed"] in ("depth=1", "depth=2") and "summary" not in report


def test_embedded_pair_loads_offline_and_is_lossless():
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    target = load_target(EMBEDDED_TARGET, "cpu", "float32")
    head = load_head(EMBEDDED_HEAD, target)
    assert target.config.model_type == "llama" and head.config.vocab_size == target.vocab_size
    prompt = 'def is_even(n):\n    """Return True if n is even."""\n'
    plain = collect(decode(target, prompt, None, GenerationConfig(32)))
    spec = collect(decode(target, prompt, HeadDrafter(head, TreeConfig(5, 4, 16)), GenerationConfig(32)))
    assert spec.output_ids == plain.output_ids
    assert spec.tau > 1.5  # a trained head gets drafts accepted


def test_bench_smoke_on_embedded_pair(tmp_path):
    report = run_bench(tmp_path, EMBEDDED_TARGET, EMBEDDED_HEAD, "--report", str(tmp_path / "bench.html"))
    assert SUMMARY_FIELDS <= report["summary"].keys()
    assert report["summary"]["exact_match"] is True
    assert report["summary"]["divergences"]["eagle3"] == {"prompts": 0, "near_ties": 0}
    assert len(report["summary"]["acceptance_by_position"]) == 4
    assert len(report["prompts"]) == 2 and all(PROMPT_FIELDS <= row.keys() for row in report["prompts"])
    page = (tmp_path / "bench.html").read_text()
    assert "Plotly.newPlot" in page and page.count('class="plotly-graph-div"') == 3  # per prompt, acceptance, time split
    assert "EAGLE-3 speedup over plain decoding, per prompt" in page and '<script src=' not in page  # plotly.js inlined: opens offline


def test_bench_sampled_reports_no_exact_match(tmp_path, model_dirs):
    report = run_bench(tmp_path, *model_dirs, "--temperature", "0.8", "--no-prompt-lookup")
    assert report["summary"]["exact_match"] is None and report["summary"]["hf_prompt_lookup_tokens_per_s"] is None


def test_the_cost_model_is_materialised_in_its_dtype(monkeypatch):
    """The random target is cast while on `meta`: memory is allocated once, in bfloat16, never
    first in float32 (an 8B target would take 32 GB before its cast)."""
    import torch

    from eagle3.costs import random_pair

    emptied = []
    to_empty = torch.nn.Module.to_empty

    def recording(module, *args, **kwargs):
        emptied.append({p.dtype for p in module.parameters()})
        return to_empty(module, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, "to_empty", recording)
    target, head = random_pair("tiny", torch.device("cpu"), torch.bfloat16)
    assert emptied == [{torch.bfloat16}] and target.dtype == torch.bfloat16


def test_step_costs_on_a_tiny_shape(tmp_path):
    from eagle3.costs import main as costs_main

    assert costs_main(["--shape", "tiny", "--device", "cpu", "--context", "32", "--repeats", "3", "--bandwidth-mib", "64",
                       "--json", str(tmp_path / "costs.json")]) == 0
    report = json.load(open(tmp_path / "costs.json"))
    for key in ("plain_step_ms", "draft_first_level_ms"):
        assert report[key] > 0, key
    assert [int(n) for n in report["verify_ms"]] == list(MEASURED_NODES) and min(report["verify_ms"].values()) > 0
    assert report["verify_in_steps"]["1"] == 1.0
    assert report["weights_read_gb"] > 0 and report["plain_tokens_per_s"] > 0
    # On a CPU the ceiling comes from the bandwidth measured here, and plain decoding's share of it
    assert report["bandwidth_gb_s"] == report["measured_read_gb_s"] > 0
    assert report["plain_share_of_bound"] == round(report["plain_tokens_per_s"] / report["bandwidth_bound_tokens_per_s"], 3)


def test_a_step_reads_the_embedding_table_only_where_the_lm_head_shares_it():
    from eagle3.costs import weight_bytes_read

    for tied in (False, True):
        model = make_target("llama", tie_word_embeddings=tied).model
        table = model.get_input_embeddings().weight
        every = sum(p.numel() * p.element_size() for p in model.parameters())
        assert weight_bytes_read(model) == (every if tied else every - table.numel() * table.element_size())


def test_the_default_pair_is_lossless_and_matches_transformers(default_pair):
    from eagle3.bench import hf_generate
    from eagle3.presets import DEFAULT
    from eagle3.prompts import prompt_ids

    target, head = default_pair
    assert target.config.model_type == "llama" and target.num_layers == 30 and target.tokenizer.chat_template
    config, taus = GenerationConfig(24), []
    for record in read_prompts("assets/prompts/chat.jsonl")[::27]:
        ids = prompt_ids(record, target.tokenizer, chat=True)
        plain = collect(decode(target, ids, None, config))
        spec = collect(decode(target, ids, HeadDrafter(head, DEFAULT.tree), config))
        assert spec.output_ids == plain.output_ids == hf_generate(target, ids, config, None)
        taus.append(spec.tau)
    assert sum(taus) / len(taus) > 1.5  # the trained head gets drafts accepted (2.06 here; an untrained one: about 1)


def test_reports_name_the_projects_files_relative_to_the_checkout(tmp_path):
    """A committed report carries no machine's folders: the project's own files are named from
    the checkout's root; other paths and hub ids stay as given."""
    assert shown_path(os.path.join(ROOT, "checkpoints", "smollm2")) == os.path.join("checkpoints", "smollm2")
    assert shown_path(str(tmp_path)) == str(tmp_path)
    assert shown_path("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
