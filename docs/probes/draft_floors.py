"""What the budget's floors buy (eagle3.budget, NodeBudget.limits): the default pair decodes
every other prompt of the chat set with a budgeted drafter, with the floors and without them
(the same budget with `floors` off, as on a GPU), the two in turns in one process; the last of
--repeats passes is timed. Prints wall time, rounds, draft milliseconds a round and tokens a
round for each, and whether every output is the same (it must be: floors only choose what
is drafted).

    PYTHONPATH=. python docs/probes/draft_floors.py [--drafter hybrid] [--repeats 2]
"""

import argparse
import json
import time

import torch

from eagle3.budget import node_budget
from eagle3.checkpoint import load_head
from eagle3.decoding import GenerationConfig, decode
from eagle3.drafters import drafter_named
from eagle3.presets import SMOLLM2
from eagle3.prompts import chat_ids
from eagle3.target import load_target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drafter", default="hybrid", choices=["eagle3", "hybrid"])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(2)
    target = load_target(SMOLLM2.target, None, "auto")
    head = load_head(SMOLLM2.head, target, "auto")
    config = GenerationConfig(max_new_tokens=128)
    with open("assets/prompts/chat.jsonl") as lines:
        prompts = [chat_ids(target.tokenizer, [], json.loads(line)["turns"][0]) for line in lines][::2]
    variants = {"floors": True, "no floors": False}
    totals = {name: dict(seconds=0.0, draft=0.0, rounds=0, tokens=0) for name in variants}
    outputs = {name: [] for name in variants}
    for repeat in range(args.repeats):
        for ids in prompts:
            for name, floors in variants.items():
                budget = node_budget("measured", target, config)
                budget.floors = floors
                drafter = drafter_named(args.drafter, head, SMOLLM2.tree, budget=budget)
                start = time.perf_counter()
                events = list(decode(target, ids, drafter, config))
                seconds = time.perf_counter() - start
                if repeat == args.repeats - 1:
                    total = totals[name]
                    total["seconds"] += seconds
                    total["draft"] += sum(event.draft_s for event in events[1:])
                    total["rounds"] += len(events) - 1
                    total["tokens"] += sum(len(event.output_ids) for event in events[1:])
                    outputs[name].append([i for event in events for i in event.output_ids])
    print(f"{args.drafter}, {len(prompts)} chat prompts, 128 tokens, pass {args.repeats} of {args.repeats}:")
    for name, total in totals.items():
        print(f"{name:<10} {total['seconds']:6.2f} s  {total['rounds']:5d} rounds  "
              f"draft {total['draft'] / total['rounds'] * 1000:.2f} ms a round  "
              f"{total['tokens'] / total['rounds']:.3f} tokens a round")
    print("same outputs:", outputs["floors"] == outputs["no floors"])


if __name__ == "__main__":
    main()
