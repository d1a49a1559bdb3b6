"""Tree shapes timed against each other in one process: per prompt, every drafter with every
tree in turn (eagle3.bench.in_turns: the median of --repeats turns), the product's settings
otherwise (the node budget measured on this device, greedy, 128 new tokens). Prints each
shape's total time and tau relative to the first's; outputs must all be equal.

    PYTHONPATH=. python docs/probes/tree_speed.py --trees 4x4x16 6x4x16 [--drafters eagle3 hybrid]
        [--head HEAD] [--prompts assets/prompts/chat.jsonl] [--per-category 2] [--repeats 2]

Times need the machine to themselves (pause any training first).
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from tqdm import tqdm

from docs.probes.tree_shapes import parse_tree
from eagle3 import GenerationConfig, decode, load_head, load_target
from eagle3.bench import encode_records, in_turns
from eagle3.budget import node_budget
from eagle3.drafters import drafter_named
from eagle3.presets import SMOLLM2_HEAD, SMOLLM2_TARGET
from eagle3.prompts import first_per_category, read_prompts
from eagle3.stats import RunStats, collect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", nargs="+", type=parse_tree, required=True)
    parser.add_argument("--drafters", nargs="+", default=["eagle3", "hybrid"], choices=["eagle3", "hybrid"])
    parser.add_argument("--head", default=SMOLLM2_HEAD)
    parser.add_argument("--target", default=SMOLLM2_TARGET)
    parser.add_argument("--prompts", default="assets/prompts/chat.jsonl")
    parser.add_argument("--per-category", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    target = load_target(args.target)
    head = load_head(args.head, target)
    config = GenerationConfig(max_new_tokens=128)
    encoded = encode_records(target, first_per_category(read_prompts(args.prompts), args.per_category), chat=True)
    shapes = {f"{tree.depth}x{tree.top_k}x{tree.total_tokens}": tree for tree in args.trees}
    names = [(drafter, shape) for drafter in args.drafters for shape in shapes]

    def calls(ids: list[int], config: GenerationConfig) -> dict:
        return {(drafter, shape): lambda drafter=drafter, shape=shape: collect(decode(
            target, ids, drafter_named(drafter, head, shapes[shape], budget=node_budget("measured", target, config)),
            config)) for drafter, shape in names}

    for call in calls(encoded[0], GenerationConfig(max_new_tokens=16)).values():  # warm-up
        call()
    seconds, stats = defaultdict(float), defaultdict(RunStats)
    for ids in tqdm(encoded, desc="prompts", unit="prompt"):
        results, times, _ = in_turns(target.device, calls(ids, config), args.repeats)
        outputs = {tuple(result.output_ids) for result in results.values()}
        if len(outputs) != 1:
            raise RuntimeError("the trees gave different outputs: speculation is not lossless here")
        for name, result in results.items():
            seconds[name] += times[name]
            stats[name].pool(result)
    print("| drafter | depth x top_k x nodes | seconds | time against the first tree | tau | nodes per round |")
    print("| --- | --- | --- | --- | --- | --- |")
    for drafter, shape in names:
        first, run = seconds[(drafter, next(iter(shapes)))], stats[(drafter, shape)]
        print(f"| {drafter} | {shape} | {seconds[(drafter, shape)]:.2f} | {seconds[(drafter, shape)] / first:.3f} | "
              f"{run.tau:.2f} | {run.nodes_per_round:.1f} |")


if __name__ == "__main__":
    main()
