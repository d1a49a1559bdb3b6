"""The benchmark's figures, in Plotly: an interactive HTML report and PNG images of it.

    python -m eagle3.bench --prompts assets/prompts/chat.jsonl --json runs/bench.json --report runs/bench.html
    python -m eagle3.report runs/bench.json --html runs/bench.html --png assets/figures

Each figure is built from the JSON report alone (see `eagle3.bench`), so a saved report can
be drawn again at any time. The HTML file carries plotly.js inside it (it opens offline).
PNG images are rendered by plotly's own image export (kaleido) with the machine's chromium.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import plotly.graph_objects as go

GREEN, SLATE, BLUE, AMBER, RED, VIOLET = "#16a34a", "#64748b", "#3b82f6", "#f59e0b", "#dc2626", "#7c3aed"
DRAFTER_BARS = {"lookup": ("lookup (ours)", VIOLET), "hybrid": ("hybrid", BLUE)}  # the other drafters' bars
LAYOUT = dict(template="plotly_white", height=380, width=760, margin=dict(l=60, r=20, t=60, b=60),
              font=dict(size=12), legend=dict(orientation="h", x=1, xanchor="right", y=1.08))


def prompt_speedups(report: dict) -> go.Figure:
    """Speedup per prompt, coloured by category, with the overall speedup as a line."""
    rows, overall = report["prompts"], report["summary"]["speedup"]
    fig = go.Figure()
    for category in dict.fromkeys(r["category"] or "-" for r in rows):
        chosen = [(i, r) for i, r in enumerate(rows) if (r["category"] or "-") == category]
        fig.add_bar(x=[i + 1 for i, _ in chosen], y=[r["speedup"] for _, r in chosen], name=category,
                    customdata=[[r["id"], r["tau"], len(r["eagle3_ids"])] for _, r in chosen],
                    hovertemplate="prompt %{customdata[0]}<br>speedup %{y:.2f}x<br>tau %{customdata[1]:.2f}"
                                  "<br>%{customdata[2]} tokens<extra>%{fullData.name}</extra>")
    fig.add_hline(y=1.0, line=dict(color=SLATE, width=1))
    fig.add_hline(y=overall, line=dict(color=GREEN, dash="dash"), annotation_text=f"overall {overall:.2f}x")
    return fig.update_layout(LAYOUT, title="EAGLE-3 speedup over plain decoding, per prompt",
                             xaxis_title="prompt", yaxis_title="speedup (plain time / EAGLE-3 time)")


def category_speedups(report: dict) -> go.Figure:
    """Speedup per category of EAGLE-3, of the other drafters timed (lookup, hybrid) and of
    Hugging Face prompt lookup where measured, with EAGLE-3's tau."""
    names = list(report["categories"])
    rows = [report["categories"][n] for n in names]
    fig = go.Figure()
    fig.add_bar(x=names, y=[r["speedup"] for r in rows], name="EAGLE-3", marker_color=GREEN,
                customdata=[r["tau"] for r in rows], hovertemplate="%{x}: %{y:.2f}x, tau %{customdata:.2f}<extra></extra>")
    for drafter in report["summary"].get("drafters", {}):
        name, color = DRAFTER_BARS[drafter]
        fig.add_bar(x=names, y=[r[f"{drafter}_speedup"] for r in rows], name=name, marker_color=color,
                    hovertemplate=f"%{{x}}: %{{y:.2f}}x<extra>{name}</extra>")
    if all(r["hf_prompt_lookup_speedup"] for r in rows):
        fig.add_bar(x=names, y=[r["hf_prompt_lookup_speedup"] for r in rows], name="HF prompt lookup",
                    marker_color=SLATE, hovertemplate="%{x}: %{y:.2f}x<extra>HF prompt lookup</extra>")
    fig.add_scatter(x=names, y=[r["tau"] for r in rows], name="EAGLE-3 tau (right axis)", yaxis="y2", mode="markers",
                    marker=dict(color=AMBER, size=10, symbol="diamond"))
    fig.add_hline(y=1.0, line=dict(color=SLATE, width=1))
    return fig.update_layout(LAYOUT, title="Speedup per category", barmode="group",
                             yaxis_title="speedup over plain decoding",
                             yaxis2=dict(title="tau (tokens per round)", overlaying="y", side="right",
                                         range=[0, 1.15 * max(r["tau"] for r in rows)], showgrid=False))


def acceptance(report: dict) -> go.Figure:
    summary = report["summary"]
    fractions = summary["acceptance_by_position"]
    fig = go.Figure(go.Bar(x=list(range(1, len(fractions) + 1)), y=fractions, marker_color=GREEN,
                           hovertemplate="%{y:.1%} of rounds accepted at least %{x} drafts<extra></extra>"))
    return fig.update_layout(LAYOUT, title=f"Rounds accepting at least i drafts (tau {summary['tau']:.2f})",
                             xaxis=dict(title="draft position i", dtick=1), yaxis=dict(title="fraction", range=[0, 1]))


def time_split(report: dict) -> go.Figure:
    """Where EAGLE-3's time went, summed over prompts, next to plain decoding's time."""
    split, rows = report["summary"]["time_split"], report["prompts"]
    plain_s = sum(r["plain_s"] for r in rows)
    fig = go.Figure()
    for part, color in (("draft_s", BLUE), ("verify_s", GREEN), ("bookkeeping_s", AMBER)):
        fig.add_bar(y=["EAGLE-3"], x=[split[part]], name=part.removesuffix("_s"), orientation="h", marker_color=color,
                    hovertemplate="%{x:.2f} s<extra>%{fullData.name}</extra>")
    fig.add_bar(y=["plain"], x=[plain_s], name="plain decoding", orientation="h", marker_color=SLATE,
                hovertemplate="%{x:.2f} s<extra>plain decoding</extra>")
    return fig.update_layout(LAYOUT, height=260, title="Time split, summed over prompts", barmode="stack",
                             xaxis_title="seconds")


def sweep(report: dict) -> go.Figure:
    variants = report["sweep"]["variants"]
    fixed = [v for v in variants if v["variant"] != "adaptive"]
    fig = go.Figure()
    fig.add_scatter(x=[int(v["variant"].split("=")[1]) for v in fixed], y=[v["speedup"] for v in fixed], name="speedup",
                    mode="lines+markers", line_color=GREEN, customdata=[v["tau"] for v in fixed],
                    hovertemplate="depth %{x}: %{y:.2f}x, tau %{customdata:.2f}<extra></extra>")
    if "adaptive_speedup" in report["sweep"]:
        fig.add_hline(y=report["sweep"]["adaptive_speedup"], line=dict(color=AMBER, dash="dash"),
                      annotation_text=f"adaptive {report['sweep']['adaptive_speedup']:.2f}x")
    return fig.update_layout(LAYOUT, title="Speedup by draft depth", xaxis=dict(title="draft depth", dtick=1),
                             yaxis_title="speedup over plain decoding")


def batch(report: dict) -> go.Figure:
    sizes = report["batch"]["sizes"]
    x = [r["batch_size"] for r in sizes]
    fig = go.Figure()
    fig.add_scatter(x=x, y=[r["plain_tokens_per_s"] for r in sizes], name="plain", mode="lines+markers", line_color=SLATE)
    fig.add_scatter(x=x, y=[r["eagle3_tokens_per_s"] for r in sizes], name="EAGLE-3", mode="lines+markers",
                    line_color=GREEN, customdata=[r["gain"] for r in sizes],
                    hovertemplate="batch %{x}: %{y:.1f} tok/s (%{customdata:.2f}x plain)<extra>EAGLE-3</extra>")
    return fig.update_layout(LAYOUT, title="Batched throughput", yaxis_title="tokens/s (whole batch)",
                             xaxis=dict(title="batch size", type="log", tickvals=x, ticktext=[str(v) for v in x]))


def figures(report: dict) -> dict[str, go.Figure]:
    """Every figure the report has the data for, by file name."""
    made = {}
    if "summary" in report:
        made["speedup_per_prompt"] = prompt_speedups(report)
        if len(report.get("categories", {})) > 1:
            made["speedup_per_category"] = category_speedups(report)
        made["acceptance_by_position"] = acceptance(report)
        made["time_split"] = time_split(report)
    if "sweep" in report:
        made["sweep"] = sweep(report)
    if "batch" in report:
        made["batch"] = batch(report)
    return made


def write_html(report: dict, path: str) -> None:
    """One page with every figure; plotly.js is inlined once, so it opens offline."""
    settings, parts = report.get("settings", {}), []
    for i, fig in enumerate(figures(report).values()):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=i == 0, config={"displaylogo": False}))
    heading = (f"EAGLE-3 benchmark: {settings.get('target', '')} + {settings.get('draft', '')} on "
               f"{settings.get('device_name', settings.get('device', ''))}")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"<!doctype html><html><head><meta charset='utf-8'><title>{heading}</title></head>"
                f"<body style='font-family: sans-serif'><h2>{heading}</h2>{''.join(parts)}</body></html>")


def system_chromium() -> str | None:
    """The machine's chromium (Debian's `chromium` package), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def write_png(fig, path: str, scale: float = 1.5) -> None:
    """A figure as a PNG image (plotly's kaleido export, with the system's chromium)."""
    import plotly.io as pio

    chromium = system_chromium()
    if chromium and not os.environ.get("BROWSER_PATH"):
        os.environ["BROWSER_PATH"] = chromium  # where kaleido looks for a browser
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    pio.write_image(fig, path, scale=scale)


def write_pngs(report: dict, directory: str, scale: float = 1.5) -> list[str]:
    """PNG images of the report's figures, one per figure, in `directory`."""
    paths = []
    for name, fig in figures(report).items():
        paths.append(os.path.join(directory, f"{name}.png"))
        write_png(fig, paths[-1], scale)
    return paths


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagle3.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", help="a JSON report written by python -m eagle3.bench --json")
    parser.add_argument("--html", default=None, help="write the interactive report here")
    parser.add_argument("--png", default=None, metavar="DIR", help="write one PNG per figure into this folder")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        with open(args.report, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        print(f"error: report {args.report}: {error}", file=sys.stderr)
        return 2
    if not args.html and not args.png:
        print("error: nothing to write: give --html FILE and/or --png DIR", file=sys.stderr)
        return 2
    if args.html:
        write_html(report, args.html)
        print(f"wrote {args.html}")
    if args.png:
        for path in write_pngs(report, args.png):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
