"""Which recipe options the 20k and 40k stages train with: every option whose 10k head beat
the 10k head of EAGLE-3's recipe (same data, seed and passes) on MT-bench, the set that counts
most, by at least --margin of EAGLE-3 tau, without losing more than --margin on the chat set.

    python docs/pipeline/pick_recipe.py lk-lambda vocab16k eagle31 [--runs runs/scaling]

Prints the options kept, one a line (none: EAGLE-3's recipe), after a table of each on
stderr. Exits 2 if a 10k head named here has not been measured yet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def tau(runs: str, folder: str, prompts: str) -> float | None:
    path = os.path.join(runs, folder, f"{prompts}.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)["summary"]["tau"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recipes", nargs="+", help="recipe names: their 10k heads are runs/scaling/10k-NAME")
    parser.add_argument("--runs", default="runs/scaling")
    parser.add_argument("--margin", type=float, default=0.03, help="tau a change must gain on MT-bench (and may lose on the chat set)")
    args = parser.parse_args(argv)
    folders = {"EAGLE-3": "10k", **{name: f"10k-{name}" for name in args.recipes}}
    scores = {name: (tau(args.runs, folder, "mtbench"), tau(args.runs, folder, "chat")) for name, folder in folders.items()}
    missing = [folders[name] for name, pair in scores.items() if None in pair]
    if missing:
        print(f"pick_recipe: not measured yet: {', '.join(missing)} (docs/pipeline/stage.sh measures them)", file=sys.stderr)
        return 2
    base_mtbench, base_chat = scores["EAGLE-3"]
    for name, (mtbench, chat) in scores.items():
        print(f"{name}: MT-bench tau {mtbench:.2f}, chat tau {chat:.2f}", file=sys.stderr)
    for name in args.recipes:
        mtbench, chat = scores[name]
        if mtbench >= base_mtbench + args.margin and chat >= base_chat - args.margin:
            print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
