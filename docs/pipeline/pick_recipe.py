"""Which recipe options the 20k and 40k stages train with: every option whose 10k head beat
the 10k head of EAGLE-3's recipe (same data, seed and passes) on MT-bench, the set that counts
most, by at least --margin of EAGLE-3 tau, without losing more than --margin on the chat set.

    PYTHONPATH=. python docs/pipeline/pick_recipe.py lk-lambda vocab16k eagle31 [--runs checkpoints/scaling]

Prints the options kept, one a line (none: EAGLE-3's recipe), after a table of each on
stderr. Exits 2 if a 10k head named here has not been measured yet.
"""

from __future__ import annotations

import argparse
import sys

from docs.pipeline.scaling_report import read_rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recipes", nargs="+", help="recipe names: their 10k heads are checkpoints/scaling/10k-NAME")
    parser.add_argument("--runs", default="checkpoints/scaling")
    parser.add_argument("--margin", type=float, default=0.03, help="tau a change must gain on MT-bench (and may lose on the chat set)")
    args = parser.parse_args(argv)
    # EAGLE-3 tau per (recipe, prompt set) of the 10k heads, from the reports the report script reads.
    tau = {(r["recipe"], r["set"]): r["eagle3_tau"] for r in read_rows(args.runs) if r["point"] == "10k"}
    names = ["EAGLE-3", *args.recipes]
    missing = [name for name in names if ((name, "mtbench") not in tau or (name, "chat") not in tau)]
    if missing:
        folders = ["10k" if name == "EAGLE-3" else f"10k-{name}" for name in missing]
        print(f"pick_recipe: not measured yet: {', '.join(folders)} (docs/pipeline/stage.sh measures them)", file=sys.stderr)
        return 2
    for name in names:
        print(f"{name}: MT-bench tau {tau[name, 'mtbench']:.2f}, chat tau {tau[name, 'chat']:.2f}", file=sys.stderr)
    for name in args.recipes:
        if (tau[name, "mtbench"] >= tau["EAGLE-3", "mtbench"] + args.margin
                and tau[name, "chat"] >= tau["EAGLE-3", "chat"] - args.margin):
            print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
