"""The scaling curve's table and Plotly figure, from the reports docs/pipeline/scaling.sh wrote.

    python docs/pipeline/scaling_report.py [--runs checkpoints/scaling] [--html docs/figures/scaling.html]
        [--png docs/figures/scaling.png]

Prints a Markdown table of the training runs (steps, hours, acceptance on the training
batches), one of the benches (one row per point, recipe and prompt set: tau and speedup of
EAGLE-3 and the hybrid, plain decoding's tokens/s, an EAGLE-3 round's draft and verification
milliseconds, acceptance by draft position, the CPU and dtype it was measured on) and writes
an HTML figure of tau against the number of training conversations (plotly.js from its CDN,
to keep the file small) and the same figure as a PNG image (kaleido, with the system's
chromium), which the docs show. Points not measured yet are left out.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics

import plotly.graph_objects as go

from eagle3.report import write_png

# Each point's training conversations: the first set's 4,370, then 1,024 a part (scaling.sh),
# then the WordNet set's 10,000.
POINTS = {"4k": 4370, "10k": 4370 + 6 * 1024, "20k": 4370 + 16 * 1024, "40k": 4370 + 37784, "50k": 4370 + 37784 + 10000}
SETS = {"chat": "chat set (20 prompts)", "mtbench": "MT-bench (32 questions)"}


def head_folders(runs: str) -> list[str]:
    """The folders under `runs`, one per head (POINT or POINT-RECIPE), in order."""
    return sorted(os.listdir(runs)) if os.path.isdir(runs) else []


def read_rows(runs: str) -> list[dict]:
    """One row per measured head and prompt set; a head's folder is POINT or POINT-RECIPE (scaling.sh)."""
    rows = []
    for folder in head_folders(runs):
        point, _, recipe = folder.partition("-")
        if point not in POINTS:
            continue
        for name in SETS:
            path = os.path.join(runs, folder, f"{name}.json")
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
            summary, settings = report["summary"], report["settings"]
            hybrid = summary["drafters"]["hybrid"]
            rows.append({"head": folder, "point": point, "recipe": recipe or "EAGLE-3", "conversations": POINTS[point], "set": name,
                         "eagle3_tau": summary["tau"], "hybrid_tau": hybrid["tau"],
                         "eagle3_speedup": summary["speedup"], "hybrid_speedup": hybrid["speedup"],
                         "plain_tokens_per_s": summary["plain_tokens_per_s"],
                         # The points may be measured on different CPUs: tau is the head's, speed the machine's.
                         "machine": f"{settings.get('device_name', settings['device'])}, {settings['dtype']}",
                         "round_ms": {part: 1e3 * summary["time_split"][f"{part}_s"] / summary["rounds"]
                                      for part in ("draft", "verify")},
                         "acceptance": summary["acceptance_by_position"]})
    return sorted(rows, key=lambda r: (r["set"], r["recipe"], r["conversations"]))


def markdown(rows: list[dict]) -> str:
    lines = ["| conversations | recipe | prompts | EAGLE-3 tau | hybrid tau | EAGLE-3 speedup | hybrid speedup | "
             "plain tokens/s | EAGLE-3 round: draft / verify ms | acceptance by position | measured on |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['conversations']:,} | {r['recipe']} | {SETS[r['set']]} | {r['eagle3_tau']:.2f} | {r['hybrid_tau']:.2f} | "
                     f"{r['eagle3_speedup']:.2f}x | {r['hybrid_speedup']:.2f}x | {r['plain_tokens_per_s']:.1f} | "
                     f"{r['round_ms']['draft']:.1f} / {r['round_ms']['verify']:.1f} | "
                     + " / ".join(f"{a:.2f}" for a in r["acceptance"]) + f" | {r['machine']} |")
    return "\n".join(lines)


def training_rows(runs: str, last: int = 100) -> list[dict]:
    """Per trained head (a folder with work/log.csv): its steps, training hours, and the
    acceptance per unrolled step averaged over its last `last` steps, on its training batches
    (the log's accept_i: sum_v min(p, q)), which compares recipes before their benches run;
    only on the same draft vocabulary, since positions whose target token lies outside it
    are left out of the average.
    The hours are the sum of the steps' wall times, each capped at 5 times the median, so
    that the run's pauses (kill -STOP around timings) do not count."""
    rows = []
    for folder in head_folders(runs):
        path = os.path.join(runs, folder, "work", "log.csv")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            log = list(csv.DictReader(f))
        if not log:
            continue
        seconds = [float(r["seconds"]) for r in log if r.get("seconds")]
        cap = 5 * statistics.median(seconds) if seconds else 0.0
        accept = [key for key in log[0] if key.startswith("accept_")]
        tail = log[-last:]
        rows.append({"head": folder, "steps": int(log[-1]["step"]), "epoch": float(log[-1]["epoch"]),
                     "hours": sum(min(s, cap) for s in seconds) / 3600 if seconds else None,
                     "accept": [sum(float(r[key]) for r in tail) / len(tail) for key in accept]})
    return rows


def training_markdown(rows: list[dict]) -> str:
    lines = ["| head | steps | passes | training hours | acceptance by unrolled step (last 100 steps) |",
             "| --- | --- | --- | --- | --- |"]
    for r in rows:
        hours = f"{r['hours']:.2f}" if r["hours"] is not None else "not logged"
        lines.append(f"| {r['head']} | {r['steps']:,} | {r['epoch']:.2f} | {hours} | "
                     + " / ".join(f"{a:.3f}" for a in r["accept"]) + " |")
    return "\n".join(lines)


def figure(rows: list[dict]) -> go.Figure:
    fig = go.Figure()
    for name, label in SETS.items():
        for recipe in sorted({r["recipe"] for r in rows}):
            # The 4k point (the first shipped head, EAGLE-3's recipe) starts every recipe's curve.
            chosen = [r for r in rows if r["set"] == name and (r["recipe"] == recipe or r["point"] == "4k")]
            for drafter, dash in (("eagle3", "solid"), ("hybrid", "dot")):
                fig.add_trace(go.Scatter(x=[r["conversations"] for r in chosen], y=[r[f"{drafter}_tau"] for r in chosen],
                                         mode="lines+markers", line={"dash": dash},
                                         name=f"{'EAGLE-3' if drafter == 'eagle3' else 'hybrid'}, {label}, recipe: {recipe}"))
    measured = sorted({r["conversations"] for r in rows})
    fig.update_layout(title="SmolLM2-135M-Instruct's EAGLE-3 head: tau against training conversations",
                      xaxis={"title": "training conversations", "type": "log", "tickvals": measured,
                             "ticktext": [f"{n:,}" for n in measured]},
                      yaxis={"title": "tau (tokens per round)"}, template="plotly_white",
                      legend={"orientation": "h", "y": -0.2}, width=900, height=620)
    return fig


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", default="checkpoints/scaling")
    parser.add_argument("--html", default="docs/figures/scaling.html")
    parser.add_argument("--png", default="docs/figures/scaling.png")
    args = parser.parse_args(argv)
    rows, trained = read_rows(args.runs), training_rows(args.runs)
    if trained:
        print(training_markdown(trained) + "\n")
    if not rows:
        print(f"error: no reports under {args.runs} yet (docs/pipeline/scaling.sh writes them)")
        return 2
    print(markdown(rows))
    os.makedirs(os.path.dirname(os.path.abspath(args.html)), exist_ok=True)
    fig = figure(rows)
    fig.write_html(args.html, include_plotlyjs="cdn")
    write_png(fig, args.png)
    print(f"wrote {args.html} and {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
