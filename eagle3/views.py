"""HTML views of decoding runs, for the app: tokens coloured by their fate, the draft tree as
SVG, the live charts' and the replay's data, summary lines.

Pure functions of the library's events and statistics, with no Gradio in them: they live in
the package, beside the events they draw, so that they are tested (and reusable) without a
server, while app.py keeps only the page, its events and its serving.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import dataclass, field
from itertools import accumulate

from eagle3.budget import VerifyCosts
from eagle3.events import RoundEvent, Token
from eagle3.exactness import Divergence
from eagle3.lookup import COPIED
from eagle3.stats import RunStats, rounds_text, tokens_per_round
from eagle3.tree import DraftTree


def token_html(token: Token, round_index: int) -> str:
    """One token as a span coloured by its state; rounds alternate an underline."""
    if not token.text:
        return ""  # part of a character: the token that completes it carries the text
    state = token.state.value
    copied = " copied" if token.source in COPIED else ""
    source = f", drafted by {token.source}" if token.source else ""
    return (f'<span class="tok {state} r{round_index % 2}{copied}" title="round {round_index}: {state}{source}">'
            f"{html.escape(token.text)}</span>")


def plain_html(token: Token) -> str:
    return f'<span class="tok plain">{html.escape(token.text)}</span>' if token.text else ""


def display_text(text: str) -> str:
    """A token's text made visible in the tree: whitespace shown, escaped, shortened."""
    shown = text.replace("\n", "↵").replace("\t", "⇥").replace(" ", "·") or "∅"
    return html.escape(shown if len(shown) <= 12 else shown[:11] + "…")


def render_tree(tree: DraftTree | None, path: list[int], texts: list[str], title: str = "") -> str:
    """The draft tree as SVG: depth left to right, the accepted path in green."""
    if tree is None:
        return '<div class="tree-svg"><p>The draft tree of a round appears here.</p></div>'
    n, children = len(tree.tokens), tree.children
    rows, leaves = [0.0] * n, 0
    for node in _postorder(children):
        if children[node]:
            rows[node] = (rows[children[node][0]] + rows[children[node][-1]]) / 2
        else:
            rows[node], leaves = leaves, leaves + 1
    width, height, col, row = 112, 22, 144, 28  # a 32-pixel gap between levels leaves room for the edges
    accepted = {0, *path}
    x = lambda node: 8 + tree.depths[node] * col  # noqa: E731
    y = lambda node: 24 + rows[node] * row  # noqa: E731
    parts = []
    for node in range(1, n):
        parent = tree.parents[node]
        x0, y0, x1, y1 = x(parent) + width, y(parent) + height / 2, x(node), y(node) + height / 2
        cls = "edge accepted" if node in accepted else "edge"
        parts.append(f'<path class="{cls}" d="M{x0},{y0} C{x0 + 10},{y0} {x1 - 10},{y1} {x1},{y1}"/>')
    for node in range(n):
        cls = "node root" if node == 0 else ("node accepted" if node in accepted else "node")
        if tree.sources and tree.sources[node] in COPIED:
            cls += " copied"
        score = "" if node == 0 else f'<text class="score" x="{x(node) + width - 4}" y="{y(node) + 15}" text-anchor="end">{tree.scores[node]:.1f}</text>'
        parts.append(f'<g class="{cls}"><title>node {node}, depth {tree.depths[node]}, log p {tree.scores[node]:.2f}</title>'
                     f'<rect x="{x(node)}" y="{y(node)}" width="{width}" height="{height}" rx="4"/>'
                     f'<text x="{x(node) + 5}" y="{y(node) + 15}">{display_text(texts[node])}</text>{score}</g>')
    svg_width, svg_height = 16 + (max(tree.depths) + 1) * col, 30 + max(leaves, 1) * row
    caption = html.escape(title) if title else ""
    return (f'<div class="tree-svg"><p>{caption}</p><svg width="{svg_width}" height="{svg_height}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg></div>')


def _postorder(children: list[list[int]]) -> list[int]:
    order, stack = [], [(0, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        else:
            stack.append((node, True))
            stack += [(c, False) for c in reversed(children[node])]
    return order


@dataclass
class RunView:
    """What one decoder's run has shown so far: its statistics, token HTML, replay frames, trees."""

    name: str
    stats: RunStats = field(default_factory=RunStats)
    html: list[str] = field(default_factory=list)
    # Per verification round: (round, its tree or None where nothing was drafted, accepted path)
    trees: list[tuple[int, DraftTree | None, list[int]]] = field(default_factory=list)
    frames: list[tuple[float, str]] = field(default_factory=list)  # (compute seconds, HTML of the tokens it added)

    def add(self, event: RoundEvent, speculative: bool) -> None:
        self.stats.add(event)
        render = (lambda t: token_html(t, event.index)) if speculative else plain_html
        added = [render(t) for t in event.tokens]
        self.html += added
        self.frames.append((round(self.stats.elapsed_s, 4), "".join(added)))
        if event.index > 0:
            self.trees.append((event.index, event.tree, event.accepted_path))


def running_speedup(spec: RunView, plain: RunView) -> tuple[list[int], list[float]]:
    """Running speedup: plain time to reach n tokens / EAGLE-3 time to reach n tokens."""
    tokens_at, speedups, j = [], [], 0
    spec_times = spec.stats.times
    for tokens, plain_s in plain.stats.times:
        while j < len(spec_times) - 1 and spec_times[j][0] < tokens:
            j += 1
        spec_tokens, spec_s = spec_times[j]
        if spec_tokens >= tokens and spec_s > 0 and tokens > 0:
            tokens_at.append(tokens)
            speedups.append(round(plain_s / spec_s, 3))
    return tokens_at, speedups


def chart_data(spec: RunView, plain: RunView, depth: int, render_ms: float = 0.0,
               costs: VerifyCosts | None = None) -> str:
    """What the live Plotly charts draw (assets/live_charts.js), as columns, in JSON. costs:
    the verification curve a measured node budget priced the trees by (None: a fixed size)."""
    speedup_tokens, speedups = running_speedup(spec, plain)
    speed = {view.name: {"seconds": [round(s, 4) for _, s in view.stats.times],
                         "tokens_per_s": [round(n / s, 2) if s > 0 else 0.0 for n, s in view.stats.times]}
             for view in (spec, plain)}
    accepted = spec.stats.accepted_per_round
    drafted = list(accumulate(depth > 0 for depth in spec.stats.depths))  # plain steps leave tau as it was
    running_tau = [round(tokens_per_round(total, rounds), 3) for rounds, total in zip(drafted, accumulate(accepted))]
    return json.dumps({
        "rounds": {"round": list(range(1, len(accepted) + 1)), "tokens": [a + 1 for a in accepted],
                   "tau": running_tau, "depth": spec.stats.depths},
        "speed": speed,
        "speedup": {"tokens": speedup_tokens, "speedup": speedups},
        "accept": {"position": list(range(1, depth + 1)), "fraction": spec.stats.acceptance(depth)},
        "sources": spec.stats.accepted_by_source,
        "budget": {"nodes": list(costs.nodes) if costs else [],
                   "steps": [round(v, 3) for v in costs.in_steps()] if costs else [],
                   "verified": sorted(Counter(spec.stats.nodes).items())},
        "render_ms": round(render_ms, 2),
    })


def replay_data(spec: RunView, plain: RunView) -> str:
    """What the replay (assets/replay.js) plays: each decoder's token HTML at the compute time
    it was produced, in JSON; empty unless both runs finished."""
    if not (spec.stats.finished and plain.stats.finished):
        return ""
    return json.dumps({"decoders": [{"name": v.name, "frames": v.frames} for v in (spec, plain)]})


def pooled(views: list[RunView]) -> RunStats:
    """A batch's rows as one run: all their tokens and rounds, over the batch's compute time
    (the rows decode together, so the longest row's time is the batch's)."""
    stats = RunStats()
    for view in views:
        stats.pool(view.stats)
    stats.elapsed_s = max(view.stats.elapsed_s for view in views)
    stats.finished = all(view.stats.finished for view in views)
    return stats


def summary_html(spec: list[RunView], plain: list[RunView], divergences: list[Divergence | None] | None) -> str:
    """The summary line of a chat reply (one row) or of a batch (one row per prompt).
    divergences: per row, where greedy EAGLE-3 left plain decoding (None: nowhere); None
    while not checked, or when sampling."""
    s, p = pooled(spec), pooled(plain)
    batch = [f"batch of {len(spec)}"] if len(spec) > 1 else []
    parts = batch + [f"new tokens {s.new_tokens}", rounds_text(s), f"tau {s.tau:.2f}",
                     f"nodes/round {s.nodes_per_round:.1f}", f"EAGLE-3 {s.tokens_per_s:.1f} tok/s"]
    if not p.finished:  # "done." only once both decoders have finished
        return " | ".join(parts) + " | plain decoding…"
    parts += [f"plain {p.tokens_per_s:.1f} tok/s", f"speedup {s.tokens_per_s / max(p.tokens_per_s, 1e-9):.2f}x"]
    if divergences is not None:
        differs = [(row, d) for row, d in enumerate(divergences, 1) if d is not None]
        if not differs:
            parts.append('<span class="lossless">lossless: identical to plain decoding</span>')
        else:
            row, first = differs[0]
            where = f"row {row}: " if batch else ""
            parts.append(f'<span class="differs">{where}{html.escape(first.describe())}</span>')
    return " | ".join(parts) + " | done."


def batch_rows_html(messages: list[str], spec: list[RunView], plain: list[RunView],
                    divergences: list[Divergence | None] | None) -> str:
    """Each prompt of a batch with its EAGLE-3 reply, coloured by fate, and the row's own figures."""
    rows = []
    for row, (message, s, p) in enumerate(zip(messages, spec, plain), 1):
        figures = f"{s.stats.new_tokens} tokens, tau {s.stats.tau:.2f}"
        if divergences is not None:
            differs = divergences[row - 1]
            figures += (" | <span class=\"lossless\">identical to plain</span>" if differs is None else
                        f" | <span class=\"differs\">{html.escape(differs.describe())}</span>")
        rows.append(f'<div class="batch-row"><div class="batch-prompt"><b>{row}.</b> {html.escape(message)}'
                    f'<span class="batch-figures">{figures}</span></div>'
                    f'<div class="tokens batch-reply">{"".join(s.html)}</div></div>')
    return "".join(rows)


def legend_html() -> str:
    items = [("accepted", "accepted draft"), ("resampled", "resampled by the target"), ("bonus", "bonus (target, no draft)"),
             ("rejected", "rejected draft"), ("accepted copied", "copied from the context (lookup, hybrid)")]
    return '<div class="legend">' + "".join(f'<span class="tok {c}">{html.escape(label)}</span>' for c, label in items) + (
        "<span>· rounds alternate an underline; hover a token for its round</span></div>")


def last_drafted(trees: list[tuple[int, DraftTree | None, list[int]]]) -> int:
    """The round (1-based) a finished run shows first: the last one that drafted anything, since
    the very last often has no room left for drafts; the last round if none drafted."""
    return next((i + 1 for i in reversed(range(len(trees))) if trees[i][1] is not None), len(trees))


def tree_html(trees: list[tuple[int, DraftTree | None, list[int]]], index: int, tokenizer) -> str:
    """The draft tree of round `index` (1-based, as the summary counts rounds; 0 or past the end
    means the last)."""
    if not trees:
        return render_tree(None, [], [])
    index = len(trees) if not 1 <= index <= len(trees) else int(index)
    round_index, tree, path = trees[index - 1]
    if tree is None:
        return (f'<div class="tree-svg"><p>Round {round_index} of {len(trees)}: nothing drafted (the token budget '
                "left no room for drafts, or no copy was found), so the target verified its root alone.</p></div>")
    texts = [tokenizer.decode([t]) for t in tree.tokens] if tokenizer is not None else [str(t) for t in tree.tokens]
    title = (f"Round {round_index} of {len(trees)}: {len(tree.tokens) - 1} drafted nodes, {len(path)} accepted "
             "(green path)")
    return render_tree(tree, path, texts, title)


def empty_charts(depth: int) -> str:
    """The charts' data before a run: axes with no points."""
    return chart_data(RunView("EAGLE-3"), RunView("plain"), depth)


def stopped_message(views: list[RunView]) -> str:
    return "stopped: " + ", ".join(f"{v.name} wrote {v.stats.new_tokens} tokens" for v in views)
