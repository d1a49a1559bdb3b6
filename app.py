"""EAGLE-3, live: speculative decoding next to plain decoding, every token coloured by its fate.

    python app.py                      # SmolLM2-135M-Instruct + its EAGLE-3 head, on 127.0.0.1:7860
    python app.py --target DIR --draft DIR --device cuda --host 0.0.0.0

This file is the UI only (layout, events, rendering); decoding lives in `eagle3/`.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from itertools import accumulate

try:  # Hugging Face ZeroGPU: `spaces` must be imported before torch
    import spaces
except ImportError:
    spaces = None

import gradio as gr
import plotly
import torch
import transformers

from eagle3 import GenerationConfig, SamplingConfig, TreeConfig, load_head, load_target
from eagle3.adaptive import AdaptiveDepth
from eagle3.batch import AUTO_MAX_SPECULATIVE_BATCH
from eagle3.decoding import decode
from eagle3.drafters import SPECULATIVE_DRAFTERS, drafter_named
from eagle3.events import RoundEvent, Token, TreeView
from eagle3.lookup import COPIED
from eagle3.options import add_pair_options
from eagle3.presets import PRESETS, Preset
from eagle3.prompts import first_per_category, fit_chat, read_prompts
from eagle3.runner import MainThreadRunner
from eagle3.stats import RunStats, tokens_per_round

ROOT = os.path.dirname(os.path.abspath(__file__))
MAX_NEW_TOKENS, MAX_PROMPT_CHARS = 1024, 16000  # enforced here, whatever the sliders say
MAX_CONTEXT = 4096  # tokens of history + reply; older turns are dropped to stay within it
MAX_BATCH = 8  # prompts decoded together by the batch panel
UPDATES_PER_S = 15
# A chat pane re-renders its whole message at each update, about 0.35 ms of the browser's
# main thread per token shown (measured in headless chromium here): a long reply is sent
# less often so that the page keeps half its time for the visitor (Stop stays clickable).
PAGE_TOKENS_PER_S = 1500
TREE_UPDATES_PER_S = 2
# plotly.js from the installed plotly package, served by the app itself: the page works offline
PLOTLY_JS = os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")
gr.set_static_paths([PLOTLY_JS])
# Static (no ${value}), so that new values leave the chart nodes in place for Plotly.react
CHARTS_TEMPLATE = """<div class="live-charts">
  <div id="chart-tau" class="chart"></div><div id="chart-speed" class="chart"></div>
  <div id="chart-speedup" class="chart"></div><div id="chart-accept" class="chart"></div>
  <div id="chart-source" class="chart"></div>
  <p class="chart-status">Charts draw here while the decoders run.</p>
</div>"""
REPLAY_TEMPLATE = """<div class="replay empty">
  <div class="replay-bar"><button class="replay-button" disabled>Replay side by side</button>
    <span class="replay-clock"></span></div>
  <p class="replay-note">Plays the last reply of both decoders again at the pace they were measured (each token at
    the compute time it was produced, on each decoder's own clock). Nothing is decoded again.</p>
  <div class="replay-panes">
    <div class="replay-pane"><b>EAGLE-3</b> <span class="replay-done"></span><div class="tokens" data-decoder="EAGLE-3"></div></div>
    <div class="replay-pane"><b>Plain decoding</b> <span class="replay-done"></span><div class="tokens" data-decoder="plain"></div></div>
  </div>
</div>"""


# The text of a pane's last reply, as the visitor reads it (rejected drafts left out), to the clipboard
COPY_REPLY_JS = """() => {
  const replies = document.querySelectorAll('#PANE [data-testid="bot"]');
  if (!replies.length) return;
  const reply = replies[replies.length - 1].cloneNode(true);
  reply.querySelectorAll('.tok.rejected').forEach((node) => node.remove());
  const text = [...reply.querySelectorAll('.tok')].map((node) => node.textContent).join('');
  document.body.dataset.copied = text;
  navigator.clipboard?.writeText(text);
}"""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    add_pair_options(parser, os.environ.get("EAGLE3_TARGET"), os.environ.get("EAGLE3_DRAFT"),
                     "default: the presets, SmolLM2 first; env EAGLE3_TARGET, and EAGLE3_DRAFT for --draft",
                     chat=False, head=False)
    parser.add_argument("--allow-any-model", action="store_true",
                        help="let visitors type any 'TARGET | HEAD' pair (paths or hub ids) into the model menu; "
                             "by default it offers only the presets and --target")
    parser.add_argument("--max-queue", type=int, default=32, help="requests waiting at most; later ones are refused")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for decoding (default: all cores, but one fewer when serving 127.0.0.1, "
                             "whose browser on this machine needs a core to draw the charts)")
    args = parser.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads: {args.threads}; use 1 or more")
    if args.max_queue < 1:
        parser.error(f"--max-queue: {args.max_queue}; use 1 or more")
    return args


# ---------------------------------------------------------------------------- models


class Models:
    """Target / head pairs by preset name, loaded when first chosen. With `allow_any`, a name
    of the form "TARGET | HEAD" (local paths or hub ids) loads that pair too."""

    def __init__(self, presets: list[Preset], device: str, dtype: str, trust_remote_code: bool = False,
                 allow_any: bool = False, attention: str = "auto"):
        self.presets = {p.name: p for p in presets}
        self.device, self.dtype, self.trust_remote_code, self.allow_any = device, dtype, trust_remote_code, allow_any
        self.attention = attention
        self.loaded: dict[str, tuple] = {}

    def get(self, name: str):
        if name not in self.loaded:
            preset = self.presets.get(name) or self.custom(name)
            try:
                target = load_target(preset.target, self.device, self.dtype or preset.dtype, self.trust_remote_code,
                                     self.attention)
                head = load_head(preset.head, target)
            except (ValueError, FileNotFoundError, OSError) as error:
                raise gr.Error(f"Cannot load {name}: {error}") from error
            if preset.name not in self.presets:  # a typed pair: chat when its tokenizer has a template
                preset = dataclasses.replace(preset, chat=bool(target.tokenizer.chat_template))
            self.loaded[name] = (preset, target, head)
        return self.loaded[name]

    def custom(self, name: str) -> Preset:
        if not self.allow_any:
            raise gr.Error(f"model: {name!r} is not offered by this server (its operator can allow any model "
                           "with --allow-any-model)")
        target, sep, head = (part.strip() for part in name.partition("|"))
        if not sep or not target or not head:
            raise gr.Error(f"model: {name!r} is not of the form 'TARGET | HEAD' (a path or hub id each)")
        return Preset(name, target, head, chat=False, tree=TreeConfig())

    @property
    def first(self) -> Preset:
        return next(iter(self.presets.values()))


def load_models(args: argparse.Namespace) -> Models:
    """The model menu of a server started with these flags (--target first, then the presets),
    its first pair loaded: before the first request, outside the GPU handler, as ZeroGPU wants."""
    presets = PRESETS
    if args.target:
        presets = [Preset(f"Custom: {args.target}", args.target, args.draft or "", chat=False, tree=TreeConfig()),
                   *PRESETS]
    models = Models(presets, args.device, args.dtype, args.trust_remote_code, args.allow_any_model, args.attention)
    models.get(presets[0].name)  # seconds for the embedded pair
    return models


# The server's model menu, which the handlers read: main() sets it (a test sets its own).
MODELS: Models | None = None


# ---------------------------------------------------------------------------- rendering


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


def render_tree(tree: TreeView | None, path: list[int], texts: list[str], title: str = "") -> str:
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
    trees: list[tuple[int, TreeView | None, list[int]]] = field(default_factory=list)
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


def chart_data(spec: RunView, plain: RunView, depth: int, render_ms: float = 0.0) -> str:
    """What the live Plotly charts draw (assets/live_charts.js), as columns, in JSON."""
    speedup_tokens, speedups = running_speedup(spec, plain)
    speed = {view.name: {"seconds": [round(s, 4) for _, s in view.stats.times],
                         "tokens_per_s": [round(n / s, 2) if s > 0 else 0.0 for n, s in view.stats.times]}
             for view in (spec, plain)}
    accepted = spec.stats.accepted_per_round
    running_tau = [round(tokens_per_round(total, rounds), 3) for rounds, total in enumerate(accumulate(accepted), 1)]
    return json.dumps({
        "rounds": {"round": list(range(1, len(accepted) + 1)), "tokens": [a + 1 for a in accepted],
                   "tau": running_tau, "depth": spec.stats.depths},
        "speed": speed,
        "speedup": {"tokens": speedup_tokens, "speedup": speedups},
        "accept": {"position": list(range(1, depth + 1)), "fraction": spec.stats.acceptance(depth)},
        "sources": spec.stats.accepted_by_source,
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


def summary_html(spec: list[RunView], plain: list[RunView], greedy: bool) -> str:
    """The summary line of a chat reply (one row) or of a batch (one row per prompt)."""
    s, p = pooled(spec), pooled(plain)
    batch = [f"batch of {len(spec)}"] if len(spec) > 1 else []
    parts = batch + [f"new tokens {s.new_tokens}", f"rounds {s.rounds}", f"tau {s.tau:.2f}",
                     f"EAGLE-3 {s.tokens_per_s:.1f} tok/s"]
    if not p.finished:  # "done." only at the very end
        return " | ".join(parts) + " | plain decoding…"
    parts += [f"plain {p.tokens_per_s:.1f} tok/s", f"speedup {s.tokens_per_s / max(p.tokens_per_s, 1e-9):.2f}x"]
    if greedy:
        differs = [(row, first_difference(a.stats.output_ids, b.stats.output_ids))
                   for row, (a, b) in enumerate(zip(spec, plain), 1)
                   if a.stats.output_ids != b.stats.output_ids]
        if not differs:
            parts.append('<span class="lossless">lossless: identical to plain decoding</span>')
        else:
            row, token = differs[0]
            where = f"row {row}: " if batch else ""
            parts.append(f'<span class="differs">{where}outputs differ from token {token}</span>')
    return " | ".join(parts) + " | done."


def first_difference(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def batch_rows_html(messages: list[str], spec: list[RunView], plain: list[RunView], greedy: bool) -> str:
    """Each prompt of a batch with its EAGLE-3 reply, coloured by fate, and the row's own figures."""
    rows = []
    for row, (message, s, p) in enumerate(zip(messages, spec, plain), 1):
        figures = f"{s.stats.new_tokens} tokens, tau {s.stats.tau:.2f}"
        if p.stats.finished and greedy:
            same = s.stats.output_ids == p.stats.output_ids
            figures += (" | <span class=\"lossless\">identical to plain</span>" if same else
                        f" | <span class=\"differs\">differs from token "
                        f"{first_difference(s.stats.output_ids, p.stats.output_ids)}</span>")
        rows.append(f'<div class="batch-row"><div class="batch-prompt"><b>{row}.</b> {html.escape(message)}'
                    f'<span class="batch-figures">{figures}</span></div>'
                    f'<div class="tokens batch-reply">{"".join(s.html)}</div></div>')
    return "".join(rows)


def legend_html() -> str:
    items = [("accepted", "accepted draft"), ("resampled", "resampled by the target"), ("bonus", "bonus (target, no draft)"),
             ("rejected", "rejected draft"), ("accepted copied", "copied from the context (lookup, hybrid)")]
    return '<div class="legend">' + "".join(f'<span class="tok {c}">{html.escape(label)}</span>' for c, label in items) + (
        "<span>· rounds alternate an underline; hover a token for its round</span></div>")


# ---------------------------------------------------------------------------- events


def build_prompt(preset: Preset, tokenizer, message: str, history: list[tuple[str, str]],
                 budget: int) -> tuple[str | list[int], int]:
    """Instruct targets get their chat template with as much of the conversation as fits in
    `budget` tokens (the oldest turns go first; returns how many went); the embedded code
    model continues the message as it is."""
    if not preset.chat:
        return message, 0
    return fit_chat(tokenizer, history, message, budget)


@dataclass
class ChatRequest:
    """One Generate (or "Decode as one batch") click: the message as typed, the settings and the
    conversation so far. The events pass their inputs by these names (the API takes them too)."""

    message: str  # a batch's prompts, one per line
    preset: str
    depth: int
    top_k: int
    total_tokens: int
    temperature: float
    top_p: float
    max_new_tokens: int
    spec_chat: list = field(default_factory=list)
    plain_chat: list = field(default_factory=list)
    history: list = field(default_factory=list)  # (user message, EAGLE-3 reply) pairs
    adaptive: bool = False
    drafter: str = "eagle3"  # eagle3, lookup or hybrid (eagle3.lookup)


class Update:
    """What one streamed update changes on the page, by component name; None leaves a
    component as it is. The fields are an event's outputs."""

    def changes(self) -> dict[str, object]:
        """The components this update sets, by name."""
        return {f.name: value for f in dataclasses.fields(self) if (value := getattr(self, f.name)) is not None}


@dataclass
class PageUpdate(Update):
    """The chat's update: its panes, charts, tree and summary."""

    message: object = None
    spec_chat: object = None
    plain_chat: object = None
    history: object = None
    charts: object = None
    tree: object = None
    round_slider: object = None
    summary: object = None
    trees: object = None
    replay: object = None


@dataclass
class BatchUpdate(Update):
    """The batch panel's update."""

    batch_summary: object = None
    batch_rows: object = None


@dataclass
class Decoding:
    """A checked request, ready to decode."""

    target: object
    head: object
    messages: list[str]  # as typed: one, or a batch's lines
    prompts: list[str | list[int]]  # each message chat-templated (ids), or itself for a completion model
    tree: TreeConfig
    config: GenerationConfig


def setting(label: str, value, kind: type = int) -> int | float:
    """A slider's (or an API caller's) value as `kind`, or a ValueError naming the slider: an
    emptied box sends None, and a typed one may send any text."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{label}: {'empty' if value in (None, '') else repr(value)}; enter a number") from None
    if kind is int and not number.is_integer():
        raise ValueError(f"{label}: {value} is not a whole number")
    return kind(number)


def parse_request(request: ChatRequest, batch: bool = False) -> Decoding:
    """The checked settings of one request, or a ValueError / gr.Error that names the problem.
    A batch takes each line of the message as a prompt of its own, without the chat's history."""
    message = request.message
    if not message.strip():
        raise ValueError("prompt: empty; type something to continue")
    if len(message) > MAX_PROMPT_CHARS:
        raise ValueError(f"prompt: {len(message)} characters; this server accepts at most {MAX_PROMPT_CHARS}")
    messages = [line for line in message.splitlines() if line.strip()] if batch else [message]
    if len(messages) > MAX_BATCH:
        raise ValueError(f"batch: {len(messages)} prompts; this server decodes at most {MAX_BATCH} together")
    if request.drafter not in SPECULATIVE_DRAFTERS:
        raise ValueError(f"drafter: {request.drafter!r} is not one of {', '.join(SPECULATIVE_DRAFTERS)}")
    preset, target, head = MODELS.get(request.preset)
    tree = TreeConfig(setting("Draft depth k", request.depth), setting("Tree top_k", request.top_k),
                      setting("Total draft tokens", request.total_tokens))
    tree.validate(head.config.draft_vocab_size)
    sampling = SamplingConfig(setting("Temperature", request.temperature, float), setting("Top-p", request.top_p, float))
    config = GenerationConfig(setting("Max new tokens", request.max_new_tokens), sampling, seed=0)
    if config.max_new_tokens > MAX_NEW_TOKENS:
        raise ValueError(f"Max new tokens: {config.max_new_tokens} is above this server's limit of {MAX_NEW_TOKENS}")
    config.validate()
    context = min(target.max_context, MAX_CONTEXT)
    budget = context - config.max_new_tokens
    history = [] if batch else request.history
    prompts = []
    for text in messages:
        prompt, dropped = build_prompt(preset, target.tokenizer, text, history, budget)
        prompts.append(prompt)
    if dropped:
        gr.Info(f"context: the {dropped} oldest turn(s) of this chat were left out to keep the prompt within "
                f"{budget} tokens ({context} minus max new tokens)")
    return Decoding(target, head, messages, prompts, tree, config)


def update_interval(tokens: int) -> float:
    """Seconds between two streamed updates of a pane showing this many tokens."""
    return max(1 / UPDATES_PER_S, tokens / PAGE_TOKENS_PER_S)


class Stops:
    """Stop requests, by browser session: a run sees its flag between two streamed updates and
    ends as a finished run does, with a final update. Gradio's own `cancels=` kills the run
    instead and, when the cancel lands between two updates, can leave the page's Generate
    event pending for good (gradio-app/gradio#11586; here 1 Stop in 2 on a 2-core machine)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._runs: dict[str | None, tuple[threading.Event, threading.Event]] = {}  # session -> (stop, ended)

    def start(self, session: str | None) -> threading.Event:
        """Register the session's run; returns its stop flag."""
        stop, ended = threading.Event(), threading.Event()
        with self._lock:
            self._runs[session] = (stop, ended)
        return stop

    def end(self, session: str | None, stop: threading.Event) -> None:
        with self._lock:
            if self._runs.get(session, (None,))[0] is stop:
                self._runs.pop(session)[1].set()

    def request(self, session: str | None, wait_s: float = 10.0) -> None:
        """Ask the session's run to stop and wait until it has sent its last update."""
        with self._lock:
            stop, ended = self._runs.get(session, (None, None))
        if stop is not None:
            stop.set()
            ended.wait(wait_s)


STOPS = Stops()


def stop_run(request: gr.Request):
    STOPS.request(request.session_hash)


def paced(decoders: list[tuple[Callable[[], Iterator], Callable]], stop: threading.Event,
          shown: Callable[[], int]) -> Iterator[None]:
    """Run the decoders one after the other, each event to its `add`; yield whenever the page
    is due an update (sooner for short replies: update_interval of `shown()` tokens). Returns
    early once `stop` is set."""
    for make, add in decoders:
        # closing(): a cancelled request (an API client's cancel) ends its decode at once
        with closing(RUNNER.stream(make, 1 / UPDATES_PER_S)) as stream:
            sent = 0.0
            for events in stream:
                for event in events:
                    add(event)
                if stop.is_set():
                    return
                if time.perf_counter() - sent >= update_interval(shown()):
                    yield
                    sent = time.perf_counter()


def failure(error: Exception) -> str:
    """The message for a run ended by bad input the checks missed, out of memory or a device error."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # this run's caches are gone with its frames; give their blocks back
    message = f"generation stopped: {type(error).__name__}: {error}"
    gr.Warning(message)
    return message


def stopped_message(views: list[RunView]) -> str:
    return "stopped: " + ", ".join(f"{v.name} wrote {v.stats.new_tokens} tokens" for v in views)


def chat(request: ChatRequest, session: str | None = None) -> Iterator[PageUpdate]:
    """Run EAGLE-3, then plain decoding, on the same prompt; stream both panes and the charts."""
    message = request.message or ""  # as typed: a code prompt's trailing newline or indent matters
    spec_chat, plain_chat = list(request.spec_chat or []), list(request.plain_chat or [])
    history = list(request.history or [])
    try:
        run = parse_request(dataclasses.replace(request, message=message, history=history))
    except (ValueError, TypeError, gr.Error) as error:  # the page shows it; the prompt and the chat stay
        gr.Warning(getattr(error, "message", None) or str(error))
        yield PageUpdate(spec_chat=spec_chat, plain_chat=plain_chat, history=history)
        return

    spec, plain = RunView("EAGLE-3"), RunView("plain")
    spec_chat += [{"role": "user", "content": html.escape(message)}, {"role": "assistant", "content": ""}]
    plain_chat += [{"role": "user", "content": html.escape(message)}, {"role": "assistant", "content": ""}]
    tokenizer = run.target.tokenizer
    last_tree, stopped = 0.0, ""
    first = True  # the first update empties the prompt box; later ones leave what is typed during the run

    def update(final: bool = False) -> PageUpdate:
        nonlocal last_tree, first
        started = time.perf_counter()
        spec_chat[-1]["content"] = "".join(spec.html)  # append-only, so updates travel as small diffs
        plain_chat[-1]["content"] = "".join(plain.html) or ("<em>(plain decoding did not run)</em>" if final else "")
        page = PageUpdate(spec_chat=spec_chat, plain_chat=plain_chat, history=history, trees=spec.trees)
        if spec.trees and (final or time.perf_counter() - last_tree > 1 / TREE_UPDATES_PER_S):
            last_tree = time.perf_counter()
            page.tree = tree_html(spec.trees, len(spec.trees), tokenizer)
            page.round_slider = gr.update(maximum=max(2, len(spec.trees)), value=len(spec.trees))
        if stopped:
            page.summary = f'<span class="{"" if stop.is_set() else "differs"}">{html.escape(stopped)}</span>'
        else:
            greedy = run.config.sampling.greedy
            page.summary = summary_html([spec], [plain], greedy) if spec.stats.times else "EAGLE-3 decoding…"
        if first:
            page.message, page.replay = "", ""
        if final:
            page.replay = replay_data(spec, plain)
        first = False
        page.charts = chart_data(spec, plain, run.tree.depth, 1000 * (time.perf_counter() - started))
        return page

    stop = STOPS.start(session)
    try:
        adaptive = AdaptiveDepth(1, max(run.tree.depth, 10)) if request.adaptive else None
        prompt = run.prompts[0]
        drafter = drafter_named(request.drafter, run.head, run.tree, policy=adaptive)
        decoders = [(lambda: decode(run.target, prompt, drafter, run.config), lambda event: spec.add(event, True)),
                    (lambda: decode(run.target, prompt, None, run.config), lambda event: plain.add(event, False))]
        try:
            for _ in paced(decoders, stop, lambda: len(plain.html) or len(spec.html)):  # the pane being written
                yield update()
            if stop.is_set():
                stopped = stopped_message([spec, plain])
        except (ValueError, RuntimeError, MemoryError) as error:
            stopped = failure(error)
        history.append((message, spec.stats.text))
        yield update(final=True)
    finally:  # after the last update has gone out (or the request was cancelled)
        STOPS.end(session, stop)


def batch(request: ChatRequest, session: str | None = None) -> Iterator[BatchUpdate]:
    """Decode the message's lines as one batch, speculatively and then plainly (every batch
    drafts, however large: the point is to see where drafting stops paying off); stream the rows."""
    try:
        run = parse_request(request, batch=True)
    except (ValueError, TypeError, gr.Error) as error:
        gr.Warning(getattr(error, "message", None) or str(error))
        yield BatchUpdate()
        return
    spec, plain = [RunView("EAGLE-3") for _ in run.prompts], [RunView("plain") for _ in run.prompts]
    stopped = ""

    def update() -> BatchUpdate:
        greedy = run.config.sampling.greedy
        summary = html.escape(stopped) if stopped else summary_html(spec, plain, greedy)
        return BatchUpdate(batch_summary=summary, batch_rows=batch_rows_html(run.messages, spec, plain, greedy))

    stop = STOPS.start(session)
    try:
        drafter = drafter_named(request.drafter, run.head, run.tree)
        decoders = [(lambda: decode(run.target, run.prompts, drafter, run.config),
                     lambda event: spec[event.row].add(event, True)),
                    (lambda: decode(run.target, run.prompts, None, run.config),
                     lambda event: plain[event.row].add(event, False))]
        try:
            for _ in paced(decoders, stop, lambda: sum(len(view.html) for view in spec)):
                yield update()
            if stop.is_set():
                stopped = stopped_message([RunView(v[0].name, pooled(v)) for v in (spec, plain)])
        except (ValueError, RuntimeError, MemoryError) as error:
            stopped = failure(error)
        yield update()
    finally:
        STOPS.end(session, stop)


ZERO_GPU = spaces is not None and torch.cuda.is_available()
# Decoding runs on the main thread when this file is the program: see eagle3/runner.py for why.
RUNNER = MainThreadRunner(serving=__name__ == "__main__" and not ZERO_GPU)
if ZERO_GPU:  # ZeroGPU runs the decoding in a process of its own, with the GPU attached
    chat, batch = spaces.GPU(duration=120)(chat), spaces.GPU(duration=120)(batch)
    # and wants the weights loaded, and moved to cuda, at import, in the main process
    MODELS = load_models(parse_args(sys.argv[1:] if __name__ == "__main__" else []))


def page_event(run: Callable[[ChatRequest, str | None], Iterator[Update]], outputs: dict) -> Callable:
    """The Gradio event function (and API endpoint) of `run`, chat or batch: a ChatRequest's
    fields in, by name; out, for each update, the components it changes."""

    def respond(request: gr.Request, **fields) -> Iterator[dict]:
        for update in run(ChatRequest(**fields), request.session_hash):
            yield {outputs[name]: value for name, value in update.changes().items()}

    return respond


def tree_html(trees: list[tuple[int, TreeView | None, list[int]]], index: int, tokenizer) -> str:
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


# ---------------------------------------------------------------------------- layout


def example_prompts(count: int = 8) -> list[str]:
    """First turns of the chat evaluation set, one from each of its first categories."""
    records = read_prompts(os.path.join(ROOT, "assets", "prompts", "chat.jsonl"))
    return [r.first for r in first_per_category(records, 1)][:count]


def empty_charts(depth: int) -> str:
    """The charts' data before a run: axes with no points."""
    return chart_data(RunView("EAGLE-3"), RunView("plain"), depth)


def build_demo(max_queue: int = 32) -> gr.Blocks:
    """The page, for the model menu in MODELS."""
    first = MODELS.first
    device = MODELS.get(first.name)[1].device.type
    examples = example_prompts()
    with gr.Blocks(title="EAGLE-3, live") as demo:
        gr.Markdown("# EAGLE-3, live\nChat with a real model: each reply is decoded twice from the same "
                    "conversation, by speculative decoding with an EAGLE-3 draft head (left) and by plain decoding "
                    "(right), one after the other, each timed on its own compute.")
        gr.HTML(legend_html())
        history, trees = gr.State([]), gr.State([])
        with gr.Row():
            with gr.Column(scale=3):
                # Gradio's own copy buttons would copy the coloured HTML: these copy the last reply's text
                copy_buttons = {pane: gr.Button("Copy reply", size="sm", render=False)
                                for pane in ("spec-pane", "plain-pane")}
                with gr.Row():
                    spec_chat = gr.Chatbot(label="EAGLE-3", elem_id="spec-pane", elem_classes="tokens",
                                           render_markdown=False, height=420, feedback_options=None,
                                           buttons=[copy_buttons["spec-pane"]])
                    plain_chat = gr.Chatbot(label="Plain decoding", elem_id="plain-pane", elem_classes="tokens",
                                            render_markdown=False, height=420, feedback_options=None,
                                            buttons=[copy_buttons["plain-pane"]])
                # The first example is already in the box: Generate sends the text the visitor sees.
                message = gr.Textbox(examples[0], label="Message", lines=3, elem_id="prompt",
                                     placeholder="Ask a question, or pick an example below")
                with gr.Row():
                    send = gr.Button("Generate", variant="primary", elem_id="send")
                    stop = gr.Button("Stop", elem_id="stop")
                    clear = gr.Button("Clear", elem_id="clear")
                summary = gr.HTML("", elem_id="summary")
                replay = gr.HTML("", html_template=REPLAY_TEMPLATE, js_on_load=read_asset("replay.js"), elem_id="replay")
                gr.Examples(examples, inputs=[message], label="Examples")
            with gr.Column(scale=2):
                charts = gr.HTML(empty_charts(first.tree.depth),
                                 html_template=CHARTS_TEMPLATE, js_on_load=read_asset("live_charts.js"),
                                 head=f'<script src="/gradio_api/file={PLOTLY_JS}"></script>', elem_id="charts")
        with gr.Accordion("Draft tree", open=True):
            round_slider = gr.Slider(1, 2, value=1, step=1, label="Round (the last by default)", elem_id="round")
            tree_view = gr.HTML(render_tree(None, [], []), elem_id="tree")
        with gr.Accordion("Settings", open=True):
            with gr.Row():  # the menu has a row of its own: the pairs' names are long
                preset = gr.Dropdown(list(MODELS.presets), value=first.name, label="Target + head",
                                     elem_id="preset", scale=3, allow_custom_value=MODELS.allow_any,
                                     info="or type TARGET | HEAD (paths or hub ids)" if MODELS.allow_any else None)
                drafter = gr.Radio(list(SPECULATIVE_DRAFTERS), value=first.drafter, label="Drafter", elem_id="drafter",
                                   scale=2, info="eagle3: the head's tree; lookup: copies from the chat, no head; "
                                                 "hybrid: both in one tree, verified in one pass")
            with gr.Row():
                greedy = gr.Button("Preset: greedy", size="sm")
                creative = gr.Button("Preset: creative", size="sm")
                show_rejected = gr.Checkbox(True, label="Show rejected drafts", elem_id="show-rejected")
                adaptive = gr.Checkbox(False, label="Adaptive depth (the slider sets the starting budget)",
                                       elem_id="adaptive")
            with gr.Row():
                depth = gr.Slider(1, 12, value=first.tree.depth, step=1, label="Draft depth k")
                top_k = gr.Slider(1, 16, value=first.tree.top_k, step=1, label="Tree top_k (branching)")
                total = gr.Slider(2, 128, value=first.tree.total_tokens, step=1, label="Total draft tokens (root included)")
            with gr.Row():
                temperature = gr.Slider(0, 2, value=0, step=0.05, label="Temperature (0 = greedy)")
                top_p = gr.Slider(0.05, 1, value=1, step=0.05, label="Top-p")
                # A number box, not a slider: an emptied slider box snaps to its minimum in the browser,
                # while an emptied number box sends nothing, which the request check names
                max_new = gr.Number(128, minimum=1, maximum=MAX_NEW_TOKENS, precision=0, label="Max new tokens",
                                    elem_id="max-new")
            preset_note = gr.Markdown(first.note)
        with gr.Accordion("Batch: several prompts decoded together", open=False, elem_id="batch"):
            gr.Markdown(
                "Each line is a prompt of its own (no chat history). EAGLE-3 decodes them as one batch that shares "
                "one cache and one verify forward per round, with the settings above; then plain decoding decodes "
                "the same batch. A larger batch leaves the device less idle time for the draft tree to fill, so "
                "the speedup shrinks: here every batch drafts, while the library's `eagle3.batch` falls back to "
                f"plain decoding beyond {AUTO_MAX_SPECULATIVE_BATCH.get(device, 'any number of')} prompts on "
                f"this device ({device}).")
            batch_prompts = gr.Textbox("\n".join(examples[:4]), label=f"Prompts, one per line (at most {MAX_BATCH})",
                                       lines=4, elem_id="batch-prompts")
            batch_send = gr.Button("Decode as one batch", elem_id="batch-send")
            batch_summary = gr.HTML("", elem_id="batch-summary")
            batch_rows = gr.HTML("", elem_id="batch-rows", elem_classes="tokens")

        # The components by the names of ChatRequest's and PageUpdate's fields
        page = dict(message=message, spec_chat=spec_chat, plain_chat=plain_chat, history=history, preset=preset,
                    depth=depth, top_k=top_k, total_tokens=total, temperature=temperature, top_p=top_p,
                    max_new_tokens=max_new, adaptive=adaptive, drafter=drafter, charts=charts, tree=tree_view,
                    round_slider=round_slider, summary=summary, trees=trees, replay=replay)
        inputs = {f.name: page[f.name] for f in dataclasses.fields(ChatRequest)}
        outputs = {f.name: page[f.name] for f in dataclasses.fields(PageUpdate)}

        batch_inputs = dict(inputs, message=batch_prompts)
        batch_outputs = dict(batch_summary=batch_summary, batch_rows=batch_rows)
        # always_last: a Generate clicked while a run is still ending (just after Stop) runs next, not never
        run_events = [send.click(page_event(chat, outputs), inputs_kwargs=inputs, outputs=list(outputs.values()),
                                 concurrency_id="device", api_name="generate", trigger_mode="always_last"),
                      message.submit(page_event(chat, outputs), inputs_kwargs=inputs, outputs=list(outputs.values()),
                                     concurrency_id="device", api_name=False, trigger_mode="always_last"),
                      batch_send.click(page_event(batch, batch_outputs), inputs_kwargs=batch_inputs,
                                       outputs=list(batch_outputs.values()), concurrency_id="device",
                                       api_name="generate_batch", trigger_mode="always_last")]
        cleared = [spec_chat, plain_chat, history, summary, tree_view, trees, charts, replay, batch_summary, batch_rows]

        def empty_page(depth):
            return [], [], [], "", render_tree(None, [], []), [], empty_charts(int(depth)), "", "", ""

        if ZERO_GPU:  # the run is in a process of its own, out of reach of a flag: cancel it
            stop.click(None, None, None, cancels=run_events)
            clear.click(empty_page, depth, cleared, cancels=run_events)
        else:
            stop.click(stop_run, None, None, concurrency_id="stop", concurrency_limit=None, api_name=False)
            clear.click(stop_run, None, None, concurrency_id="stop", concurrency_limit=None, api_name=False).then(
                empty_page, depth, cleared)
        round_slider.release(lambda kept, i, name: tree_html(kept, i, MODELS.get(name)[1].tokenizer),
                             [trees, round_slider, preset], tree_view)
        for pane, button in copy_buttons.items():
            button.click(None, None, None, js=COPY_REPLY_JS.replace("PANE", pane))
        greedy.click(lambda: (0.0, 1.0), None, [temperature, top_p])
        creative.click(lambda: (0.8, 0.95), None, [temperature, top_p])
        preset.change(preset_changed, preset, [depth, top_k, total, drafter, preset_note])
        show_rejected.change(None, show_rejected, None,
                             js="(show) => { document.body.classList.toggle('hide-rejected', !show); }")
    demo.queue(max_size=max_queue, default_concurrency_limit=1)
    return demo


def preset_changed(name: str):
    try:
        preset = MODELS.get(name)[0]
    except gr.Error as error:
        gr.Warning(str(error))
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
    return preset.tree.depth, preset.tree.top_k, preset.tree.total_tokens, preset.drafter, preset.note


def read_asset(name: str) -> str:
    with open(os.path.join(ROOT, "assets", name), encoding="utf-8") as f:
        return f.read()


def main(argv=None) -> None:
    """`python app.py`: parse the flags, load the first pair, serve."""
    global MODELS
    args = parse_args(argv)
    transformers.utils.logging.disable_progress_bar()
    if MODELS is None:  # (ZeroGPU loaded them at import)
        MODELS = load_models(args)
    # Decoding threads that share their cores with a busy process (a browser) stall at every OpenMP barrier.
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) - (args.host in ("127.0.0.1", "localhost"))))
    demo = build_demo(args.max_queue)
    # quiet: gradio's own banner suggests share=True, which this app never does
    demo.launch(server_name=args.host, server_port=args.port, share=False, css=read_asset("style.css"), theme=gr.themes.Soft(),
                prevent_thread_lock=True, quiet=True)
    print(f"EAGLE-3, live: http://{args.host}:{args.port}/ (no public link; Ctrl+C stops it)", flush=True)
    if ZERO_GPU:
        demo.block_thread()
        return
    try:
        RUNNER.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        demo.close()


if __name__ == "__main__":
    main()
