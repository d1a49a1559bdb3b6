"""How well a head's draft probabilities predict what the target accepts: greedy EAGLE-3 with the
preset tree at full size on a prompt set, and per depth, the drafted nodes' predicted
acceptance (exp of the cumulative log-probability, their tree score) against the share the
target accepted. A ratio under 1 is an over-confident head: the hybrid tree
(eagle3.lookup.hybrid_tree) ranks the head's nodes against the copies' by these scores.

    PYTHONPATH=. python docs/probes/head_calibration.py HEAD [HEAD ...] [--prompts assets/prompts/chat.jsonl] [--per-category 1]

Tau does not depend on the machine's speed here (a fixed tree), so this may share the cores.
"""

import argparse
import math

from tqdm import tqdm

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, decode, load_head, load_target
from eagle3.presets import SMOLLM2, SMOLLM2_HEAD, SMOLLM2_TARGET
from eagle3.prompts import first_per_category, prompt_ids, read_prompts


def calibration(target, head_dir: str, prompts: list[list[int]], tree: TreeConfig) -> dict[int, tuple[float, float, int]]:
    """Per depth: (predicted acceptances, actual acceptances, nodes) over every drafted tree."""
    head = load_head(head_dir, target)
    by_depth: dict[int, list[float]] = {}
    for ids in tqdm(prompts, desc=head_dir, unit="prompt"):
        for event in decode(target, ids, HeadDrafter(head, tree), GenerationConfig(max_new_tokens=128)):
            drafted = event.tree
            if drafted is None or len(drafted) == 1:
                continue
            accepted = set(event.accepted_path)
            for node in range(1, len(drafted)):
                row = by_depth.setdefault(drafted.depths[node], [0.0, 0.0, 0])
                row[0] += math.exp(drafted.scores[node])
                row[1] += node in accepted
                row[2] += 1
    return {depth: tuple(row) for depth, row in sorted(by_depth.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("heads", nargs="*", default=[SMOLLM2_HEAD])
    parser.add_argument("--target", default=SMOLLM2_TARGET)
    parser.add_argument("--prompts", default="assets/prompts/chat.jsonl")
    parser.add_argument("--per-category", type=int, default=1)
    args = parser.parse_args()
    target = load_target(args.target)
    records = first_per_category(read_prompts(args.prompts), args.per_category)
    prompts = [prompt_ids(record, target.tokenizer, chat=True) for record in records]
    print("| head | depth | nodes | predicted acceptances | accepted | accepted / predicted |")
    print("| --- | --- | --- | --- | --- | --- |")
    for head_dir in args.heads:
        for depth, (predicted, accepted, nodes) in calibration(target, head_dir, prompts, SMOLLM2.tree).items():
            print(f"| {head_dir} | {depth} | {nodes} | {predicted:.1f} | {accepted:.0f} | {accepted / predicted:.2f} |")


if __name__ == "__main__":
    main()
