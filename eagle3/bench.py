"""Benchmark EAGLE-3 against plain decoding and Hugging Face prompt-lookup decoding.

    python -m eagle3.bench --prompts assets/prompts/chat.jsonl --json runs/bench.json
    python -m eagle3.bench --prompts humaneval

With no other flag the benchmark measures what the app shows by default: its default
pair, dtype, tree and chat mode (a record with `turns` is decoded as its first turn,
rendered with the target's chat template). Per prompt, on one device and one after the
other: plain decoding, EAGLE-3 speculative decoding, Hugging Face `model.generate` and
`model.generate(prompt_lookup_num_tokens=...)`, each timed by wall clock around the whole
call (with --repeats N, the median of N such turns). Speedup = total plain time / total
EAGLE-3 time, overall and per category. Every speculative decoder's trees are cut each round
to what this device's measured verification costs pay for (eagle3.budget; --node-budget
fixed keeps --total-tokens), the curve measured once before the first prompt. When a
llama.cpp build is on PATH and the target is a GGUF file, llama.cpp decodes every prompt too
(plain, its n-gram drafter, and EAGLE-3 with --llama-cpp-head): eagle3.llamacpp.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
from dataclasses import dataclass, field

import torch
from tqdm import tqdm

from eagle3.adaptive import AdaptiveDepth, scaled_tree
from eagle3.batch import batch_drafter
from eagle3.checkpoint import ROOT, load_head, shown_path
from eagle3.compiled import compile_decoding
from eagle3.budget import NodeBudget, node_budget as budget_for
from eagle3.decoder_layer import forward_kind
from eagle3.invariant import products_kernel
from eagle3.decoding import GenerationConfig, decode, encode_prompt
from eagle3.drafters import SPECULATIVE_DRAFTERS, HeadDrafter, drafter_named
from eagle3.exactness import divergence
from eagle3.llamacpp import LlamaCpp, find_llama_cpp, summarise as summarise_llama_cpp
from eagle3.lookup import LookupConfig
from eagle3.options import add_generation_options, add_pair_options, add_tree_options, generation_config
from eagle3.presets import choose_pair
from eagle3.prompts import PromptRecord, first_per_category, prompt_ids as record_ids, read_prompts
from eagle3.stats import RunStats, collect, collect_rows, tokens_per_round, tokens_per_second
from eagle3.target import Target, device_name, load_target
from eagle3.transfer import clock
from eagle3.tree import TreeConfig


def hf_generate(target: Target, prompt_ids: list[int], config: GenerationConfig, lookup_tokens: int | None) -> list[int]:
    """Hugging Face `generate`, with prompt lookup when lookup_tokens is set; same stopping rules."""
    ids = torch.tensor([prompt_ids], device=target.device)
    sampling = config.sampling
    kwargs = dict(do_sample=False) if sampling.greedy else dict(
        do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k or None)
    out = target.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=config.max_new_tokens,
                                prompt_lookup_num_tokens=lookup_tokens or None, eos_token_id=sorted(target.eos_token_ids) or None,
                                pad_token_id=next(iter(target.eos_token_ids), 0), **kwargs)
    return out[0, len(prompt_ids):].tolist()


def timed(device, fn):
    start = clock(device)
    result = fn()
    return result, clock(device) - start


def in_turns(device, calls: dict, repeats: int = 1) -> tuple[dict, dict[str, float], dict[str, list[float]]]:
    """Every call in turn, the whole round `repeats` times, so that a slow spell of the machine
    falls on all of them: each call's first result, its median seconds and every timing."""
    results, times = {}, {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            result, seconds = timed(device, call)
            results.setdefault(name, result)
            times[name].append(seconds)
    return results, {name: statistics.median(t) for name, t in times.items()}, times


@dataclass
class Tally:
    """One decoder's runs pooled over prompts, with the wall seconds timed around each call."""

    stats: RunStats = field(default_factory=RunStats)
    seconds: float = 0.0

    def add(self, stats: RunStats, seconds: float) -> None:
        self.stats.pool(stats)
        self.seconds += seconds

    @property
    def tokens_per_s(self) -> float:
        return tokens_per_second(self.stats.new_tokens, self.seconds)


def encode_records(target: Target, records: list[PromptRecord], chat: bool) -> list[list[int]]:
    """The exact ids each record is decoded from (checked like any prompt)."""
    if target.tokenizer is None:
        raise ValueError("prompts: the target has no tokenizer to encode them")
    return [encode_prompt(target, record_ids(r, target.tokenizer, chat)) for r in records]


def run(target: Target, head, records: list[PromptRecord], tree: TreeConfig, config: GenerationConfig,
        chat: bool = False, lookup_tokens: int = 10, with_prompt_lookup: bool = True, warmup: int = 1,
        progress: bool = True, adaptive: tuple[int, int] | None = None, drafters: tuple[str, ...] = (),
        repeats: int = 1, node_budget: str = "fixed", llama_cpp: LlamaCpp | None = None) -> dict:
    """Benchmark every prompt; returns the JSON report (see the README for its fields).
    adaptive: (min, max) depth bounds to let the adaptive policy choose each round's depth.
    drafters: other drafters ("lookup", "hybrid") timed on every prompt too, beside EAGLE-3's.
    repeats: each prompt is decoded this many times by every decoder in turn, and each
    decoder's time on it is the median; outputs and statistics are the first time's.
    node_budget: "measured" cuts every speculative decoder's trees by eagle3.budget (the
    verification curve is measured before the first prompt; not with a seeded sampled
    config, see node_budget), "fixed" keeps the tree's size.
    llama_cpp: llama.cpp's decoders, run on each prompt's text after this project's (greedy only)."""
    lookup = LookupConfig(tokens=lookup_tokens)
    policy = (lambda: AdaptiveDepth(*adaptive)) if adaptive else (lambda: None)  # noqa: E731
    device = target.device
    encoded = encode_records(target, records, chat)
    budget = lambda: budget_for(node_budget, target, config)  # noqa: E731 (one per decode: it learns as it goes)

    def decoders(prompt_ids: list[int], config: GenerationConfig) -> dict:
        """Each decoder as a call that returns its RunStats, in the order they are timed."""
        calls = {"plain": lambda: collect(decode(target, prompt_ids, None, config))}
        for name in ("eagle3", *drafters):
            calls[name] = lambda name=name: collect(decode(
                target, prompt_ids, drafter_named(name, head, tree, lookup, policy() if name == "eagle3" else None,
                                                  budget()), config))
        calls["hf_generate"] = lambda: RunStats(output_ids=hf_generate(target, prompt_ids, config, None))
        if with_prompt_lookup:
            calls["hf_lookup"] = lambda: RunStats(output_ids=hf_generate(target, prompt_ids, config, lookup_tokens))
        return calls

    warm = GenerationConfig(16, config.sampling, config.seed)
    for prompt_ids in encoded[:warmup]:
        for call in decoders(prompt_ids, warm).values():
            call()

    rows = []
    totals = {name: Tally() for name in ("plain", "eagle3", "hf_generate", "hf_lookup", *drafters)}
    for record, prompt_ids in tqdm(list(zip(records, encoded)), desc="bench", disable=not progress, dynamic_ncols=True):
        results, seconds, times = in_turns(device, decoders(prompt_ids, config), repeats)
        for name, result in results.items():
            totals[name].add(result, seconds[name])
        plain, spec = results["plain"], results["eagle3"]
        row = {"id": record.id, "category": record.category, "prompt": record.first, "prompt_ids": prompt_ids,
               "plain_ids": plain.output_ids, "eagle3_ids": spec.output_ids, "tau": round(spec.tau, 4),
               "rounds": spec.rounds, "drafted_rounds": len(spec.drafted), "accepted_drafts": sum(spec.drafted),
               "speedup": round(seconds["plain"] / seconds["eagle3"], 4), "plain_s": round(seconds["plain"], 4),
               "eagle3_s": round(seconds["eagle3"], 4)}
        for drafter in drafters:
            other = results[drafter]
            row.update({f"{drafter}_ids": other.output_ids, f"{drafter}_s": round(seconds[drafter], 4),
                        f"{drafter}_tau": round(other.tau, 4), f"{drafter}_accepted_by_source": dict(other.accepted_by_source)})
        row["hf_generate_s"] = round(seconds["hf_generate"], 4)
        if config.sampling.greedy:
            row["hf_generate_matches"] = results["hf_generate"].output_ids == spec.output_ids
            found = {name: divergence(target, prompt_ids, plain.output_ids, results[name].output_ids)
                     for name in ("eagle3", *drafters)}
            row["divergences"] = {name: dataclasses.asdict(d) | {"near_tie": d.near_tie}
                                  for name, d in found.items() if d is not None}
        if with_prompt_lookup:
            row["hf_prompt_lookup_s"] = round(seconds["hf_lookup"], 4)
        if repeats > 1:
            row["seconds_by_repeat"] = {name: [round(v, 4) for v in t] for name, t in times.items()}
        if llama_cpp is not None:
            row["llama_cpp"] = llama_cpp_rows(llama_cpp, target.tokenizer.decode(prompt_ids), config, repeats)
        rows.append(row)
    report = {"summary": summarise(totals, rows, tree, config, drafters), "categories": by_category(rows, drafters),
              "prompts": rows, "settings": settings(target, head, tree, config, lookup_tokens) | {"repeats": repeats}
              | budget_settings(budget())}
    if llama_cpp is not None:
        report["llama_cpp"] = {"model": llama_cpp.model, "head": llama_cpp.head, "errors": llama_cpp.errors,
                               "commands": {d.name: " ".join(llama_cpp.command(d, "PROMPT.txt", config.max_new_tokens))
                                            for d in llama_cpp.decoders()},
                               "summary": summarise_llama_cpp(rows, totals["plain"].tokens_per_s)}
    return report


def llama_cpp_rows(llama_cpp: LlamaCpp, prompt_text: str, config: GenerationConfig, repeats: int) -> dict:
    """One prompt through each of llama.cpp's decoders: counts, median seconds, and whether each
    speculative one's text is its plain decoding's."""
    found = llama_cpp.decode_all(prompt_text, config.max_new_tokens, repeats)
    plain = found.get("llama_cpp_plain")
    rows = {}
    for name, (run, seconds) in found.items():
        rows[name] = {"prompt_tokens": run.prompt_tokens, "new_tokens": run.new_tokens, "seconds": round(seconds, 4),
                      "drafted": run.drafted, "accepted": run.accepted, "text": run.text}
        if plain is not None and name != "llama_cpp_plain":
            rows[name]["matches_plain"] = run.agrees_with(plain[0])
    return rows


def budget_settings(budget: NodeBudget | None) -> dict:
    """The node budget the run used, and with a measured one the verification curve it priced trees by."""
    if budget is None:
        return {"node_budget": "fixed"}
    costs = budget.costs  # measured before the first prompt
    return {"node_budget": "measured", "verify_ms": {n: round(s * 1000, 3) for n, s in zip(costs.nodes, costs.seconds)}}


def by_category(rows: list[dict], drafters: tuple[str, ...] = ()) -> dict[str, dict]:
    """Speedup (summed plain time / summed EAGLE-3 time) and tau per category of prompt, and the
    other drafters' speedups."""
    table = {}
    for category in sorted({r["category"] for r in rows}):
        chosen = [r for r in rows if r["category"] == category]
        rounds = sum(r["drafted_rounds"] for r in chosen)
        lookup = [r["hf_prompt_lookup_s"] for r in chosen if "hf_prompt_lookup_s" in r]
        plain_s, spec_s = sum(r["plain_s"] for r in chosen), sum(r["eagle3_s"] for r in chosen)
        table[category or "-"] = {
            "prompts": len(chosen), "speedup": round(plain_s / spec_s, 4),
            "tau": round(tokens_per_round(sum(r["accepted_drafts"] for r in chosen), rounds), 4),
            "plain_tokens_per_s": round(sum(len(r["plain_ids"]) for r in chosen) / plain_s, 2),
            "eagle3_tokens_per_s": round(sum(len(r["eagle3_ids"]) for r in chosen) / spec_s, 2),
            "hf_prompt_lookup_speedup": round(plain_s / sum(lookup), 4) if len(lookup) == len(chosen) else None,
            **{f"{d}_speedup": round(plain_s / sum(r[f"{d}_s"] for r in chosen), 4) for d in drafters},
        }
    return table


def sweep(target: Target, head, encoded: list[list[int]], tree: TreeConfig, config: GenerationConfig, depths: list[int],
          adaptive: bool, progress: bool = True) -> dict:
    """Speedup of each fixed depth (node budget scaled with it) and of the adaptive policy,
    all timed per prompt right after one plain run of the same prompt."""
    variants = {f"depth={d}": (scaled_tree(tree, d), None) for d in depths}
    if adaptive:
        variants["adaptive"] = (tree, lambda: AdaptiveDepth(min(depths), max(depths)))
    totals = {name: Tally() for name in ["plain", *variants]}
    device = target.device
    for prompt_ids in tqdm(encoded, desc="sweep", disable=not progress):
        calls = {"plain": lambda: collect(decode(target, prompt_ids, None, config))}
        for name, (variant_tree, policy) in variants.items():
            calls[name] = lambda variant_tree=variant_tree, policy=policy: collect(decode(
                target, prompt_ids, HeadDrafter(head, variant_tree, policy() if policy else None), config))
        results, seconds, _ = in_turns(device, calls)
        for name, result in results.items():
            totals[name].add(result, seconds[name])
    rows = [{"variant": name, "speedup": round(totals["plain"].seconds / t.seconds, 4),
             "tau": round(t.stats.tau, 3), "tokens_per_s": round(t.tokens_per_s, 2)}
            for name, t in totals.items() if name != "plain"]
    fixed = [r for r in rows if r["variant"] != "adaptive"]
    best = max(fixed, key=lambda r: r["speedup"])
    report = {"variants": rows, "plain_tokens_per_s": round(totals["plain"].tokens_per_s, 2),
              "best_fixed": best["variant"], "best_fixed_speedup": best["speedup"]}
    if adaptive:
        report["adaptive_speedup"] = rows[-1]["speedup"]
        report["adaptive_vs_best_fixed"] = round(rows[-1]["speedup"] / best["speedup"], 4)
    return report


def batch_throughput(target: Target, head, prompts: list[list[int]], tree: TreeConfig, config: GenerationConfig,
                     batch_sizes: list[int], max_speculative_batch: int | None = None, progress: bool = True) -> dict:
    """Tokens/s over whole batches, plain batched vs speculative batched, for each batch
    size, on the same prompts (repeated to fill the largest batch)."""
    count = max(len(prompts), max(batch_sizes))
    encoded = [prompts[i % len(prompts)] for i in range(count)]
    def drafter(name: str, size: int):
        return batch_drafter(HeadDrafter(head, tree), size, target.device, max_speculative_batch) if name == "eagle3" else None

    collect_rows(decode(target, encoded[:2], drafter("eagle3", 2), GenerationConfig(8, config.sampling, config.seed)))  # warm-up
    rows = []
    for size in tqdm(batch_sizes, desc="batch sizes", disable=not progress):
        chunks = [encoded[i : i + size] for i in range(0, count - count % size, size)]
        measured = {}
        for name in ("plain", "eagle3"):
            tokens, seconds = 0, 0.0
            for chunk in chunks:
                results, elapsed = timed(target.device, lambda: collect_rows(decode(
                    target, chunk, drafter(name, len(chunk)), config)))
                tokens += sum(len(r.output_ids) for r in results)
                seconds += elapsed
            measured[name] = tokens / seconds
        rows.append({"batch_size": size, "plain_tokens_per_s": round(measured["plain"], 2),
                     "eagle3_tokens_per_s": round(measured["eagle3"], 2),
                     "gain": round(measured["eagle3"] / measured["plain"], 4)})
    crossover = next((r["batch_size"] for r in rows if r["gain"] < 1.0), None)
    return {"sizes": rows, "crossover_batch_size": crossover, "max_speculative_batch": max_speculative_batch}


def summarise(totals: dict[str, Tally], rows: list[dict], tree: TreeConfig, config: GenerationConfig,
              drafters: tuple[str, ...] = ()) -> dict:
    spec = totals["eagle3"].stats
    greedy = config.sampling.greedy
    return {
        "speedup": round(totals["plain"].seconds / totals["eagle3"].seconds, 4),
        "tau": round(spec.tau, 4),
        "plain_tokens_per_s": round(totals["plain"].tokens_per_s, 2),
        "eagle3_tokens_per_s": round(totals["eagle3"].tokens_per_s, 2),
        "hf_prompt_lookup_tokens_per_s": round(totals["hf_lookup"].tokens_per_s, 2) if totals["hf_lookup"].seconds else None,
        "hf_generate_tokens_per_s": round(totals["hf_generate"].tokens_per_s, 2),  # the plain decoder must be at least this fast
        "exact_match": all(r["plain_ids"] == r["eagle3_ids"] for r in rows) if config.sampling.greedy else None,
        # greedy: per decoder, the prompts whose output left plain decoding's, and how many at a near-tie
        "divergences": {name: {"prompts": sum(name in r["divergences"] for r in rows),
                               "near_ties": sum(r["divergences"].get(name, {}).get("near_tie", False) for r in rows)}
                        for name in ("eagle3", *drafters)} if greedy else None,
        "acceptance_by_position": spec.acceptance(tree.depth),
        "nodes_per_round": round(spec.nodes_per_round, 2),  # verified, root included
        "prompts": len(rows),
        "new_tokens": spec.new_tokens,
        "rounds": spec.rounds,
        "plain_steps": spec.plain_steps,  # rounds that drafted nothing (tau and acceptance leave them out)
        "time_split": {  # where EAGLE-3 spent its time, summed over prompts
            "draft_s": round(spec.draft_s, 3), "verify_s": round(spec.verify_s, 3),
            "bookkeeping_s": round(spec.bookkeeping_s, 3),
        },
        "accepted_by_source": dict(spec.accepted_by_source),
        "drafters": {d: {"speedup": round(totals["plain"].seconds / totals[d].seconds, 4),
                         "tokens_per_s": round(totals[d].tokens_per_s, 2), "tau": round(totals[d].stats.tau, 4),
                         "nodes_per_round": round(totals[d].stats.nodes_per_round, 2),
                         "rounds": totals[d].stats.rounds, "plain_steps": totals[d].stats.plain_steps,
                         "exact_match": all(r["plain_ids"] == r[f"{d}_ids"] for r in rows) if greedy else None,
                         "accepted_by_source": dict(totals[d].stats.accepted_by_source)} for d in drafters},
    }


def settings(target: Target, head, tree: TreeConfig, config: GenerationConfig, lookup_tokens: int) -> dict:
    device = target.device
    return {
        "device": str(device), "device_name": device_name(device), "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "compiled": getattr(target.layers[0], "_compiled_call_impl", None) is not None,
        "decoder_layer": forward_kind(target.layers[0]),
        "products": products_kernel(target.layers[0].mlp.down_proj.weight),
        "dtype": str(target.dtype).removeprefix("torch."), "attention": target.config._attn_implementation,
        "draft_dtype": str(head.fc.weight.dtype).removeprefix("torch."),
        "target_layers": target.num_layers,
        "depth": tree.depth, "top_k": tree.top_k, "total_tokens": tree.total_tokens,
        "max_new_tokens": config.max_new_tokens, "temperature": config.sampling.temperature,
        "top_p": config.sampling.top_p, "seed": config.seed, "prompt_lookup_num_tokens": lookup_tokens,
        "torch": torch.__version__, "python": platform.python_version(),
    }


def print_table(report: dict) -> None:
    print(f"{'#':>3} {'tokens':>6} {'plain tok/s':>11} {'eagle3 tok/s':>12} {'speedup':>8} {'tau':>5}")
    for i, row in enumerate(report["prompts"]):
        n = len(row["eagle3_ids"])
        print(f"{i:>3} {n:>6} {len(row['plain_ids']) / row['plain_s']:>11.1f} {n / row['eagle3_s']:>12.1f} "
              f"{row['speedup']:>7.2f}x {row['tau']:>5.2f}")
    s = report["summary"]
    lookup = s["hf_prompt_lookup_tokens_per_s"]
    print(f"\nplain {s['plain_tokens_per_s']} tok/s (HF generate {s['hf_generate_tokens_per_s']}) | EAGLE-3 {s['eagle3_tokens_per_s']} tok/s | "
          f"prompt lookup {lookup if lookup is not None else '-'} tok/s | speedup {s['speedup']:.2f}x | "
          f"tau {s['tau']:.2f} | nodes per round {s['nodes_per_round']} | plain steps {s['plain_steps']} of "
          f"{s['rounds']} rounds | exact match {s['exact_match']}")
    print("acceptance by position: " + " ".join(f"{a:.2f}" for a in s["acceptance_by_position"]))
    for name, d in (s["divergences"] or {}).items():
        if d["prompts"]:
            print(f"{name}: output left plain decoding's on {d['prompts']} prompt(s), {d['near_ties']} at a near-tie "
                  "(the prompts' `divergences` say where)")
    split = s["time_split"]
    print(f"time split: draft {split['draft_s']} s, verify {split['verify_s']} s, bookkeeping {split['bookkeeping_s']} s")
    for name, d in s.get("drafters", {}).items():
        print(f"drafter {name}: {d['tokens_per_s']} tok/s | speedup {d['speedup']:.2f}x | tau {d['tau']:.2f} | "
              f"nodes per round {d['nodes_per_round']} | plain steps {d['plain_steps']} of {d['rounds']} rounds | "
              f"exact match {d['exact_match']} | accepted drafts by source {d['accepted_by_source']}")
    for name, d in report.get("llama_cpp", {}).get("summary", {}).items():
        print(f"{name}: {d['tokens_per_s']} tok/s | {d.get('speedup_over_project_plain', '-')}x this project's plain"
              + (f" | {d.get('speedup_over_its_plain', '-')}x its plain | tau {d['tau']} | "
                 f"text left its plain decoding's on {d['text_differs_from_its_plain']} prompt(s)" if "tau" in d else ""))
    for name, error in report.get("llama_cpp", {}).get("errors", {}).items():
        print(f"{name} stopped: {error}")
    if len(report["categories"]) > 1:
        drafters = list(s.get("drafters", {}))
        print(f"\n{'category':<14} {'prompts':>7} {'eagle3':>7} {'tau':>5} " + "".join(f"{d:>7} " for d in drafters)
              + f"{'HF lookup':>9}")
        for name, row in report["categories"].items():
            lookup = f"{row['hf_prompt_lookup_speedup']:.2f}x" if row["hf_prompt_lookup_speedup"] else "-"
            print(f"{name:<14} {row['prompts']:>7} {row['speedup']:>6.2f}x {row['tau']:>5.2f} "
                  + "".join(f"{row[d + '_speedup']:>6.2f}x " for d in drafters) + f"{lookup:>9}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagle3.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_pair_options(parser, target_note="default: the app's default pair")
    parser.add_argument("--prompts", default=os.path.join(ROOT, "assets", "prompts", "chat.jsonl"),
                        help="a JSONL file of prompts, or a named set: humaneval, mtbench")
    parser.add_argument("--limit", type=int, default=None, help="only the first N prompts")
    parser.add_argument("--per-category", type=int, default=None, metavar="N",
                        help="only the first N prompts of each category (a smaller set with every category)")
    add_tree_options(parser)
    add_generation_options(parser, seed=0)
    parser.add_argument("--prompt-lookup-tokens", type=int, default=10,
                        help="the longest copy: Hugging Face prompt lookup's, and the lookup / hybrid drafters' chains")
    parser.add_argument("--drafters", default="lookup,hybrid",
                        help="other drafters timed beside EAGLE-3 on every prompt: lookup, hybrid, both or none")
    parser.add_argument("--repeats", type=int, default=1, metavar="N",
                        help="decode each prompt N times with every decoder in turn and time each by its median "
                             "(steadier per-prompt and per-category figures on a busy machine)")
    parser.add_argument("--no-prompt-lookup", action="store_true", help="skip the Hugging Face prompt-lookup baseline")
    parser.add_argument("--llama-cpp-head", default=None, metavar="FILE.gguf",
                        help="the head converted for llama.cpp (python -m eagle3.llamacpp): adds llama.cpp's EAGLE-3 "
                             "row when llama.cpp is on PATH")
    parser.add_argument("--no-llama-cpp", action="store_true",
                        help="leave llama.cpp's rows out even when a build is on PATH")
    parser.add_argument("--sweep", default=None, metavar="depth=A..B",
                        help="also time each fixed depth A..B (node budget scaled with depth)")
    parser.add_argument("--adaptive", action="store_true",
                        help="EAGLE-3 with the adaptive depth policy (bounded by --sweep when given, else 1..10)")
    parser.add_argument("--batch-sizes", default=None, metavar="1,2,4,8,16",
                        help="also measure batched throughput, plain vs speculative, at these batch sizes")
    parser.add_argument("--max-speculative-batch", type=int, default=None,
                        help="above this batch size, batched decoding falls back to plain decoding")
    parser.add_argument("--skip-main", action="store_true", help="only the sweep / batch measurements")
    parser.add_argument("--json", default=None, help="write the report here")
    parser.add_argument("--report", default=None, metavar="FILE.html",
                        help="an interactive Plotly report of the figures (PNG images: python -m eagle3.report)")
    return parser.parse_args(argv)


def parse_sweep(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        name, span = text.split("=")
        low, high = (int(v) for v in span.split(".."))
    except ValueError:
        raise ValueError(f"sweep: {text!r} is not of the form depth=A..B") from None
    if name != "depth" or not 1 <= low <= high <= 64:
        raise ValueError(f"sweep: {text!r} must be depth=A..B with 1 <= A <= B <= 64")
    return list(range(low, high + 1))


def parse_drafters(text: str) -> tuple[str, ...]:
    names = tuple(name for name in text.split(",") if name and name != "none")
    others = [name for name in SPECULATIVE_DRAFTERS if name != "eagle3"]
    for name in names:
        if name not in others:
            raise ValueError(f"drafters: {name!r} is not one of {', '.join(others)} (or none)")
    return names


def parse_sizes(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        sizes = [int(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"batch sizes: {text!r} is not a comma-separated list of integers") from None
    if not sizes or min(sizes) < 1 or max(sizes) > 256:
        raise ValueError(f"batch sizes: {text!r} must lie in [1, 256]")
    return sizes


def print_extras(report: dict) -> None:
    if "sweep" in report:
        print("\nvariant      speedup   tau  tokens/s")
        for row in report["sweep"]["variants"]:
            print(f"{row['variant']:<12} {row['speedup']:>6.2f}x {row['tau']:>5.2f} {row['tokens_per_s']:>9.1f}")
        if "adaptive_vs_best_fixed" in report["sweep"]:
            print(f"adaptive / best fixed ({report['sweep']['best_fixed']}): {report['sweep']['adaptive_vs_best_fixed']:.3f}")
    if "batch" in report:
        print("\nbatch  plain tok/s  EAGLE-3 tok/s   gain")
        for row in report["batch"]["sizes"]:
            print(f"{row['batch_size']:>5} {row['plain_tokens_per_s']:>12.1f} {row['eagle3_tokens_per_s']:>14.1f} {row['gain']:>6.2f}x")
        print(f"gain below 1.0 from batch size: {report['batch']['crossover_batch_size']}")


def llama_cpp_for(args, tree: TreeConfig, config: GenerationConfig) -> LlamaCpp | None:
    """llama.cpp's decoders for this run, or None; says on stderr what is left out and why."""
    if not config.sampling.greedy:
        llama_cpp, note = None, "llama.cpp: greedy only (its sampler is not this project's); its rows are left out"
    else:
        llama_cpp, note = find_llama_cpp(args.target, args.llama_cpp_head, torch.get_num_threads(), tree.depth,
                                         (LookupConfig.max_ngram, args.prompt_lookup_tokens))
    if note and (llama_cpp is not None or args.llama_cpp_head):
        print(note, file=sys.stderr)
    return llama_cpp


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        pair = choose_pair(args)
        depths, sizes, drafters = parse_sweep(args.sweep), parse_sizes(args.batch_sizes), parse_drafters(args.drafters)
        if args.repeats < 1:
            raise ValueError(f"--repeats: {args.repeats} is below 1")
        if pair.draft is None:
            raise ValueError(f"--draft: no head is known for --target {args.target}; name one")
        target = load_target(args.target, args.device, pair.dtype, args.trust_remote_code, args.attention)
        head = load_head(pair.draft, target, args.draft_dtype)
        if args.compile:
            compile_decoding(target, head)
        records = first_per_category(read_prompts(args.prompts), args.per_category)[: args.limit]
        chat, tree = pair.chat_for(target.tokenizer), pair.tree
        config = generation_config(args)
        llama_cpp = None if args.no_llama_cpp or args.skip_main else llama_cpp_for(args, tree, config)
        bounds = (min(depths), max(depths)) if depths else (1, 10)
        report = {} if args.skip_main else run(target, head, records, tree, config, chat, args.prompt_lookup_tokens,
                                               not args.no_prompt_lookup, adaptive=bounds if args.adaptive else None,
                                               drafters=drafters, repeats=args.repeats, node_budget=args.node_budget,
                                               llama_cpp=llama_cpp)
        if depths or sizes:
            encoded = encode_records(target, records, chat)
        if depths:
            report["sweep"] = sweep(target, head, encoded, tree, config, depths, args.adaptive)
        if sizes:
            report["batch"] = batch_throughput(target, head, encoded, tree, config, sizes, args.max_speculative_batch)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    report.setdefault("settings", {}).update(target=shown_path(args.target), draft=pair.draft and shown_path(pair.draft),
                                             prompts=shown_path(args.prompts), chat=chat)
    if "summary" in report:
        print_table(report)
    print_extras(report)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    if args.report:
        from eagle3.report import write_html

        write_html(report, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
