"""Benchmark EAGLE-3 against plain decoding and Hugging Face prompt-lookup decoding.

    python -m eagle3.bench --prompts assets/prompts/code.jsonl --max-new-tokens 128 --json runs/bench.json

Per prompt, on one device and one after the other: plain decoding, EAGLE-3 speculative
decoding, Hugging Face `model.generate` and `model.generate(prompt_lookup_num_tokens=...)`,
each timed by wall clock around the whole call. Speedup = total plain time / total EAGLE-3 time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

import torch
from tqdm import tqdm

from eagle3.acceptance import SamplingConfig
from eagle3.checkpoint import EMBEDDED_HEAD, EMBEDDED_TARGET, load_head
from eagle3.data import read_jsonl
from eagle3.decode import GenerationConfig, GenerationResult, clock, collect, encode_prompt, plain_decode, speculative_decode
from eagle3.target import Target, load_target
from eagle3.tree import TreeConfig


def read_prompts(path: str) -> list[str]:
    """{"prompt": str} per line, or Spec-Bench style {"turns": [str, ...]} (first turn)."""
    prompts = []
    for number, record in enumerate(read_jsonl(path), 1):
        if isinstance(record.get("prompt"), str):
            prompts.append(record["prompt"])
        elif isinstance(record.get("turns"), list) and record["turns"]:
            prompts.append(str(record["turns"][0]))
        else:
            raise ValueError(f"{path}:{number}: needs a 'prompt' string or a non-empty 'turns' list")
    return prompts


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


def run(target: Target, head, prompts: list[str], tree: TreeConfig, config: GenerationConfig,
        lookup_tokens: int = 10, with_prompt_lookup: bool = True, warmup: int = 1, progress: bool = True) -> dict:
    """Benchmark every prompt; returns the JSON report (see the README for its fields)."""
    device = target.device
    encoded = [encode_prompt(target, p) for p in prompts]
    warm = GenerationConfig(16, config.sampling, config.seed)
    for prompt_ids in encoded[:warmup]:
        collect(plain_decode(target, prompt_ids, warm))
        collect(speculative_decode(target, head, prompt_ids, tree, warm))
        hf_generate(target, prompt_ids, warm, None)
        if with_prompt_lookup:
            hf_generate(target, prompt_ids, warm, lookup_tokens)

    rows, results = [], []
    totals = {"plain": [0, 0.0], "eagle3": [0, 0.0], "hf_generate": [0, 0.0], "lookup": [0, 0.0]}
    for prompt, prompt_ids in tqdm(list(zip(prompts, encoded)), desc="bench", disable=not progress, dynamic_ncols=True):
        plain, plain_s = timed(device, lambda: collect(plain_decode(target, prompt_ids, config)))
        spec, spec_s = timed(device, lambda: collect(speculative_decode(target, head, prompt_ids, tree, config)))
        totals["plain"][0] += len(plain.output_ids)
        totals["plain"][1] += plain_s
        totals["eagle3"][0] += len(spec.output_ids)
        totals["eagle3"][1] += spec_s
        row = {"prompt": prompt, "plain_ids": plain.output_ids, "eagle3_ids": spec.output_ids, "tau": round(spec.tau, 4),
               "speedup": round(plain_s / spec_s, 4), "plain_s": round(plain_s, 4), "eagle3_s": round(spec_s, 4)}
        generate_ids, generate_s = timed(device, lambda: hf_generate(target, prompt_ids, config, None))
        totals["hf_generate"][0] += len(generate_ids)
        totals["hf_generate"][1] += generate_s
        row["hf_generate_s"] = round(generate_s, 4)
        if with_prompt_lookup:
            lookup_ids, lookup_s = timed(device, lambda: hf_generate(target, prompt_ids, config, lookup_tokens))
            totals["lookup"][0] += len(lookup_ids)
            totals["lookup"][1] += lookup_s
            row["hf_prompt_lookup_s"] = round(lookup_s, 4)
        rows.append(row)
        results.append(spec)
    return {"summary": summarise(totals, results, rows, tree, config), "prompts": rows,
            "settings": settings(target, head, tree, config, lookup_tokens)}


def summarise(totals: dict, results: list[GenerationResult], rows: list[dict], tree: TreeConfig,
              config: GenerationConfig) -> dict:
    accepted = [a for r in results for a in r.accepted_per_round]
    rounds = max(1, len(accepted))
    rate = lambda key: totals[key][0] / totals[key][1] if totals[key][1] > 0 else None  # noqa: E731
    return {
        "speedup": round(totals["plain"][1] / totals["eagle3"][1], 4),
        "tau": round(sum(a + 1 for a in accepted) / rounds, 4),
        "plain_tokens_per_s": round(rate("plain"), 2),
        "eagle3_tokens_per_s": round(rate("eagle3"), 2),
        "hf_prompt_lookup_tokens_per_s": round(rate("lookup"), 2) if rate("lookup") else None,
        "hf_generate_tokens_per_s": round(rate("hf_generate"), 2),  # the plain decoder must be at least this fast
        "exact_match": all(r["plain_ids"] == r["eagle3_ids"] for r in rows) if config.sampling.greedy else None,
        "acceptance_by_position": [round(sum(a > i for a in accepted) / rounds, 4) for i in range(tree.depth)],
        "prompts": len(rows),
        "new_tokens": totals["eagle3"][0],
        "rounds": len(accepted),
        "time_split": {  # where EAGLE-3 spent its time, summed over prompts
            "draft_s": round(sum(r.draft_s for r in results), 3),
            "verify_s": round(sum(r.verify_s for r in results), 3),
            "bookkeeping_s": round(sum(r.bookkeeping_s for r in results), 3),
        },
    }


def settings(target: Target, head, tree: TreeConfig, config: GenerationConfig, lookup_tokens: int) -> dict:
    device = target.device
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    return {
        "device": str(device), "device_name": name, "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "dtype": str(target.dtype).removeprefix("torch."), "draft_dtype": str(head.fc.weight.dtype).removeprefix("torch."),
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
          f"tau {s['tau']:.2f} | exact match {s['exact_match']}")
    print("acceptance by position: " + " ".join(f"{a:.2f}" for a in s["acceptance_by_position"]))


def plot(report: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary, rows = report["summary"], report["prompts"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    left.bar(range(len(rows)), [r["speedup"] for r in rows], color="#3b82f6")
    left.axhline(1.0, color="#6b7280", linewidth=1)
    left.axhline(summary["speedup"], color="#16a34a", linestyle="--", label=f"overall {summary['speedup']:.2f}x")
    left.set(title="EAGLE-3 speedup over plain decoding, per prompt", xlabel="prompt", ylabel="speedup")
    left.legend(frameon=False)
    positions = range(1, len(summary["acceptance_by_position"]) + 1)
    right.bar(positions, summary["acceptance_by_position"], color="#16a34a")
    right.set(title=f"Rounds accepting at least i drafts (tau {summary['tau']:.2f})", xlabel="i", ylabel="fraction",
              ylim=(0, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagle3.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default=EMBEDDED_TARGET)
    parser.add_argument("--draft", default=EMBEDDED_HEAD)
    parser.add_argument("--prompts", default="assets/prompts/code.jsonl")
    parser.add_argument("--limit", type=int, default=None, help="only the first N prompts")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--depth", type=int, default=TreeConfig.depth)
    parser.add_argument("--top-k", type=int, default=TreeConfig.top_k)
    parser.add_argument("--total-tokens", type=int, default=TreeConfig.total_tokens)
    parser.add_argument("--prompt-lookup-tokens", type=int, default=10)
    parser.add_argument("--no-prompt-lookup", action="store_true", help="skip the Hugging Face prompt-lookup baseline")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto", help="the target's dtype (auto: float32 on CPU, bfloat16 on CUDA)")
    parser.add_argument("--draft-dtype", default="auto", help="the head's dtype (auto: bfloat16 where it is fast)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the report here")
    parser.add_argument("--plot", default=None, help="draw speedup per prompt and acceptance by position (PNG)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        target = load_target(args.target, args.device, args.dtype)
        head = load_head(args.draft, target, args.draft_dtype)
        prompts = read_prompts(args.prompts)[: args.limit]
        config = GenerationConfig(args.max_new_tokens, SamplingConfig(args.temperature, args.top_p), args.seed)
        tree = TreeConfig(args.depth, args.top_k, args.total_tokens)
        report = run(target, head, prompts, tree, config, args.prompt_lookup_tokens, not args.no_prompt_lookup)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print_table(report)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    if args.plot:
        plot(report, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
