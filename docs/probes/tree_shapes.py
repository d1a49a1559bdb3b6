"""Greedy tau of many tree shapes for one head, without verifying a single tree.

Greedy acceptance is decided by the target's greedy continuation alone: a round accepts the
longest tree path that spells it. So each prompt's continuation is decoded once (speculatively,
which is lossless, with the preset's drafter and tree: that run's rounds are the check below), the target's
fused features along it are taken from one forward over prompt + continuation, and every tree
shape is then replayed with the real drafters (eagle3.drafters) against that oracle: the
verdict at a node on the continuation's path is the continuation's next token, and the
features the head reads after a round are the ones that forward gave those positions. A shape
costs only its drafting, so a whole grid runs in minutes on a CPU.

The replay of the preset tree must give the very rounds the real decode gave (printed as
"replay check"); it does where the target's features from one forward carry the bits of the
one-token steps (eagle3.invariant on a CPU).

    PYTHONPATH=. python docs/probes/tree_shapes.py HEAD --prompts assets/prompts/chat.jsonl:2 mtbench:4 \
        --trees 4x4x16 5x4x16 6x3x16 [--drafters eagle3 hybrid] [--cache runs/tree_shapes]

A tree is DEPTHxTOP_KxTOTAL_TOKENS; a prompt set is a file or named set, with :N for the first N
prompts of each category. Continuations and features are cached per prompt set (they depend
on the target only, not on the head). Tau does not depend on the machine's speed, so this may
share the cores.
"""

from __future__ import annotations

import argparse
import os

import torch
from tqdm import tqdm

from eagle3 import GenerationConfig, TreeConfig, decode, load_head, load_target
from eagle3.decoding import Run, prefill, prefilled, settle
from eagle3.drafters import drafter_named
from eagle3.presets import SMOLLM2, SMOLLM2_TARGET
from eagle3.prompts import first_per_category, prompt_ids, read_prompts
from eagle3.stats import RunStats, collect
from eagle3.tree import DraftTree

MAX_NEW_TOKENS = 128
BEYOND = 16  # greedy tokens after the output's last (the budget's or EOS), which a tree may reach


def continuations(target, head, records, tree: TreeConfig) -> list[dict]:
    """Per prompt: its ids, the greedy continuation (the output, then BEYOND tokens more), the
    target's features [n, 3H] along prompt + continuation, and the accepted drafts per round of
    the real decode with `head`, `tree` and the preset's drafter (the replay's check)."""
    found = []
    for record in tqdm(records, desc="continuations", unit="prompt"):
        ids = prompt_ids(record, target.tokenizer, chat=True)
        real = collect(decode(target, ids, drafter_named(SMOLLM2.drafter, head, tree),
                              GenerationConfig(max_new_tokens=MAX_NEW_TOKENS)))
        # A round at the budget or at EOS may accept drafts past them, which the output then
        # cuts; the oracle needs them too.
        after = decode(target, ids + real.output_ids, None, GenerationConfig(max_new_tokens=BEYOND))
        beyond = collect(after).output_ids
        sequence = ids + real.output_ids + beyond
        cache = target.new_cache(len(sequence))
        with torch.inference_mode():
            _, _, out = prefill(target, [sequence], cache, capture=True)
        found.append({"ids": ids, "output": real.output_ids, "beyond": beyond, "features": out.features[0].clone(),
                      "accepted": real.accepted_per_round})
    return found


def oracle_verdict(tree: DraftTree, sequence: list[int], root_at: int) -> tuple[list[int], list[int]]:
    """What the target would say at each node of a tree whose root sits at position root_at of
    the greedy sequence: its next greedy token on the sequence's path (-1 off it, never read by
    a greedy walk), and the sequence position of each node on the path (-1 off it)."""
    at = [-1] * len(tree)
    verdict = [-1] * len(tree)
    for node in range(len(tree)):
        parent = tree.parents[node]
        position = root_at + tree.depths[node]
        spelled = position < len(sequence) and tree.tokens[node] == sequence[position]
        on_path = parent < 0 or (at[parent] >= 0 and spelled)
        if on_path:
            at[node] = position
            verdict[node] = sequence[position + 1] if position + 1 < len(sequence) else -1
    return verdict, at


def replay(target, drafter, prompt: dict) -> RunStats:
    """The decode loop of eagle3.decoding.decode for one prompt, the target's forwards replaced
    by the oracle (one row, greedy)."""
    ids, features = prompt["ids"], prompt["features"]
    sequence = ids + prompt["output"] + prompt["beyond"]
    run = Run(target, ids, GenerationConfig(max_new_tokens=MAX_NEW_TOKENS))
    drafter.start([ids], len(ids) + run.budget)
    length, root = len(ids), sequence[len(ids)]
    stats = RunStats()
    done = prefilled(ids, features[:length], root)
    event = run.emit(0, done, 0.0, 0.0, 0.0)
    stats.add(event)
    drafter.observe([done], 0.0)
    while not event.finished:
        tree = drafter.propose([root], [run.remaining])[0]
        verdict, at = oracle_verdict(tree, sequence, length)
        node_features = torch.zeros(len(tree), features.shape[-1], dtype=features.dtype)
        on_path = [node for node, position in enumerate(at) if position >= 0]
        node_features[on_path] = features[[at[node] for node in on_path]]
        done = settle(run, tree, verdict, node_features)
        length += len(done.kept)
        root = done.next_tokens[-1]
        event = run.emit(0, done, 0.0, 0.0, 0.0)
        stats.add(event)
        drafter.observe([done], 0.0)
    if stats.output_ids != prompt["output"]:
        raise RuntimeError("the replay left the greedy continuation: the oracle is wrong")
    return stats


def parse_tree(text: str) -> TreeConfig:
    depth, top_k, total = (int(part) for part in text.split("x"))
    return TreeConfig(depth=depth, top_k=top_k, total_tokens=total)


def prompt_set(target, head, head_dir: str, source: str, cache_dir: str) -> tuple[str, dict]:
    """A prompt set's continuations, cached with the head and tree their check was decoded with."""
    path, _, per_category = source.partition(":")
    name = os.path.splitext(os.path.basename(path))[0] + (f"-{per_category}" if per_category else "")
    cached = os.path.join(cache_dir, f"{name}.pt")
    if os.path.exists(cached):
        return name, torch.load(cached, weights_only=False)
    records = first_per_category(read_prompts(path), int(per_category) if per_category else None)
    found = {"head": os.path.abspath(head_dir), "tree": SMOLLM2.tree,
             "prompts": continuations(target, head, records, SMOLLM2.tree)}
    os.makedirs(cache_dir, exist_ok=True)
    torch.save(found, cached)
    return name, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("head")
    parser.add_argument("--target", default=SMOLLM2_TARGET)
    parser.add_argument("--prompts", nargs="+", default=["assets/prompts/chat.jsonl:2", "mtbench:4"])
    parser.add_argument("--trees", nargs="+", type=parse_tree, default=[SMOLLM2.tree])
    parser.add_argument("--drafters", nargs="+", default=["eagle3", "hybrid"], choices=["eagle3", "hybrid"])
    parser.add_argument("--cache", default="runs/tree_shapes")
    args = parser.parse_args()
    target = load_target(args.target)
    head = load_head(args.head, target)
    print("| prompts | drafter | depth x top_k x nodes | tau | acceptance by position |")
    print("| --- | --- | --- | --- | --- |")
    for source in args.prompts:
        name, found = prompt_set(target, head, args.head, source, args.cache)
        prompts = found["prompts"]
        if found["head"] == os.path.abspath(args.head):
            check = [replay(target, drafter_named(SMOLLM2.drafter, head, found["tree"]), prompt).accepted_per_round
                     == prompt["accepted"]
                     for prompt in prompts]
            print(f"replay check, {name}: {sum(check)} of {len(check)} prompts gave the real decode's rounds")
        for drafter_name in args.drafters:
            for tree in args.trees:
                total = RunStats()
                for prompt in prompts:
                    total.pool(replay(target, drafter_named(drafter_name, head, tree), prompt))
                by_position = " / ".join(f"{a:.2f}" for a in total.acceptance(tree.depth))
                print(f"| {name} | {drafter_name} | {tree.depth}x{tree.top_k}x{tree.total_tokens} | "
                      f"{total.tau:.2f} | {by_position} |", flush=True)


if __name__ == "__main__":
    main()
