"""EAGLE-3, live: speculative decoding next to plain decoding, every token coloured by its fate.

    python app.py                      # SmolLM2-135M-Instruct + its EAGLE-3 head, on 127.0.0.1:7860
    python app.py --target DIR --draft DIR --device cuda --host 0.0.0.0

This file is the page only: the request and update types, the run of a request (`chat`,
`batch`: one skeleton, `streamed`), the layout (`build_demo`) and `main`. Decoding lives in
`eagle3/`, and the HTML that shows a run in `eagle3/views.py`.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import multiprocessing
import os
import sys
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field

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
from eagle3.budget import NodeBudget, node_budget as budget_for
from eagle3.decoder_layer import forward_kind
from eagle3.invariant import products_kernel
from eagle3.decoding import decode
from eagle3.drafters import SPECULATIVE_DRAFTERS, drafter_named
from eagle3.exactness import Divergence, divergence
from eagle3.options import add_pair_options
from eagle3.presets import PRESETS, Preset, pair_preset
from eagle3.prompts import first_per_category, fit_chat, read_prompts
from eagle3.runner import MainThreadRunner
from eagle3.target import device_name
from eagle3.views import (RunView, batch_rows_html, chart_data, empty_charts, last_drafted, legend_html, pooled,
                          render_tree, replay_data, stopped_message, summary_html, tree_html)

ROOT = os.path.dirname(os.path.abspath(__file__))
MAX_NEW_TOKENS, MAX_PROMPT_CHARS = 1024, 16000  # enforced here, whatever the sliders say
MAX_CONTEXT = 4096  # tokens of history + reply; older turns are dropped to stay within it
MAX_BATCH = 8  # prompts decoded together by the batch panel
UPDATES_PER_S = 15
# A chat pane re-renders its whole message at each update, a fraction of a millisecond of the
# browser's main thread per token shown: a long reply is sent less often so that the page
# keeps most of its time for the visitor (Stop stays clickable), on slower CPUs too (at a
# rate three times this, a 1024-token reply kept an AVX2-only EPYC's page too busy to click).
PAGE_TOKENS_PER_S = 500
# The draft tree and the six charts redraw whole (Plotly lays each chart out again), which
# costs the page far more than a pane's few new tokens: they follow at most this often.
FIGURE_UPDATES_PER_S = 2
# plotly.js from the installed plotly package, served by the app itself: the page works offline
PLOTLY_JS = os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")
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

# ---------------------------------------------------------------------------- requests and updates


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
    node_budget: bool = True  # cut each round's tree to what the measured costs pay for (eagle3.budget)


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


# ---------------------------------------------------------------------------- flags and models


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


def memory_budget(device: torch.device) -> int:
    """Bytes that loaded pairs may hold: most of a GPU's memory (the rest is for caches and
    activations), half of the machine's memory on a CPU."""
    if device.type == "cuda":
        return int(0.8 * torch.cuda.get_device_properties(device).total_memory)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def pair_bytes(target, head) -> int:
    tensors = [*target.model.parameters(), *target.model.buffers(), *head.parameters(), *head.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


class Models:
    """Target / head pairs by preset name, loaded when first chosen and kept while they fit
    `budget` bytes (default: memory_budget of the device), the least recently used going
    first. With `allow_any`, a name of the form "TARGET | HEAD" (local paths or hub ids)
    loads that pair too. With lazy=False (ZeroGPU) every pair is loaded by `load` before
    serving and none is loaded or dropped later."""

    def __init__(self, presets: list[Preset], device: str, dtype: str, trust_remote_code: bool = False,
                 allow_any: bool = False, attention: str = "auto", budget: int | None = None, lazy: bool = True):
        self.presets = {p.name: p for p in presets}
        self.device, self.dtype, self.trust_remote_code, self.allow_any = device, dtype, trust_remote_code, allow_any
        self.attention, self.budget, self.lazy = attention, budget, lazy
        self.loaded: OrderedDict[str, tuple] = OrderedDict()  # least recently used first

    def get(self, name: str):
        if name in self.loaded:
            self.loaded.move_to_end(name)
            return self.loaded[name]
        if not self.lazy:
            raise gr.Error(f"Cannot load {name}: on ZeroGPU every model is loaded at start, and this one is not "
                           "among them")
        pair = self.load(name)
        self.evict(pair[1].device)
        return pair

    def load(self, name: str):
        """Load a pair (a preset's, or "TARGET | HEAD"); a failure is a gr.Error naming it."""
        preset = self.presets.get(name) or self.custom(name)
        try:
            target = load_target(preset.target, self.device, self.dtype or preset.dtype, self.trust_remote_code,
                                 self.attention)
            head = load_head(preset.head, target)
        except (ValueError, FileNotFoundError, OSError, RuntimeError) as error:  # RuntimeError: CUDA, ZeroGPU
            raise gr.Error(f"Cannot load {name}: {error}") from error
        if preset.chat is None:  # a pair the presets do not know: chat when its tokenizer has a template
            preset = dataclasses.replace(preset, chat=bool(target.tokenizer.chat_template))
        self.loaded[name] = (preset, target, head)
        return self.loaded[name]

    def evict(self, device: torch.device) -> None:
        """Drop the least recently used pairs until the rest fit the budget (the newest stays)."""
        budget = self.budget if self.budget is not None else memory_budget(device)
        while len(self.loaded) > 1 and sum(pair_bytes(t, h) for _, t, h in self.loaded.values()) > budget:
            self.loaded.popitem(last=False)
        if device.type == "cuda":
            torch.cuda.empty_cache()

    def custom(self, name: str) -> Preset:
        if not self.allow_any:
            raise gr.Error(f"model: {name!r} is not offered by this server (its operator can allow any model "
                           "with --allow-any-model)")
        target, sep, head = (part.strip() for part in name.partition("|"))
        if not sep or not target or not head:
            raise gr.Error(f"model: {name!r} is not of the form 'TARGET | HEAD' (a path or hub id each)")
        return Preset(name, target, head, chat=None, tree=TreeConfig())

    @property
    def first(self) -> Preset:
        return next(iter(self.presets.values()))


def load_models(args: argparse.Namespace, every: bool = False) -> Models:
    """The model menu of a server started with these flags (--target first, then the presets),
    its first pair loaded before the first request. With `every` (ZeroGPU), every pair: a GPU
    worker cannot load one, and `spaces` moves to the GPU what the main process loaded at
    import. A pair that fails to load then leaves the menu, its reason printed."""
    presets = PRESETS
    if args.target:  # first in the menu, found as the CLIs find it
        chosen = pair_preset(args.target, args.draft)
        presets = [chosen, *(p for p in PRESETS if p is not chosen)]
    models = Models(presets, args.device, args.dtype, args.trust_remote_code, args.allow_any_model, args.attention,
                    lazy=not every)
    for preset in presets if every else presets[:1]:
        try:
            models.load(preset.name)  # seconds for the embedded pair
        except gr.Error as error:
            if not every:
                raise
            print(f"model menu: {error.message}; left out", file=sys.stderr, flush=True)
            del models.presets[preset.name]
    if not models.presets:
        raise gr.Error("model menu: no pair could be loaded (see the messages above)")
    return models


# The server's model menu, which the handlers read: main() sets it (a test sets its own).
MODELS: Models | None = None
# Decoding runs inline (tests, ZeroGPU) unless main() makes the main thread serve it (eagle3/runner.py).
RUNNER = MainThreadRunner(serving=False)



# ---------------------------------------------------------------------------- a request's run


def build_prompt(preset: Preset, tokenizer, message: str, history: list[tuple[str, str]],
                 budget: int) -> tuple[str | list[int], int]:
    """Instruct targets get their chat template with as much of the conversation as fits in
    `budget` tokens (the oldest turns go first; returns how many went); the embedded code
    model continues the message as it is."""
    if not preset.chat:
        return message, 0
    return fit_chat(tokenizer, history, message, budget)


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
    """Stop requests, by browser session: a run sees its session's flag between two streamed
    updates and ends as a finished run does, with a final update. The flags live in shared
    memory, so that a run in a process forked from this one sees them too: ZeroGPU runs each
    GPU call in such a worker, and its wrapper runs the call's generator to the end whatever
    happens to the request. Gradio's own `cancels=` would kill the request instead, which
    reaches no worker and, when the cancel lands between two updates, can leave the page's
    Generate event pending for good (gradio-app/gradio#11586; here 1 Stop in 2 on a 2-core
    machine). A session's slot is a hash of its id; two live sessions sharing one of the
    `slots` would share their flag."""

    def __init__(self, slots: int = 4096):
        self._stop = multiprocessing.RawArray("b", slots)  # per slot: stop asked
        self._run = multiprocessing.RawArray("q", slots)  # per slot: the live run's number (0: none)
        self._count = multiprocessing.Value("q", 0)  # run numbers, shared by the processes

    def _slot(self, session: str | None) -> int:
        return zlib.crc32((session or "").encode()) % len(self._stop)

    def start(self, session: str | None) -> "StopFlag":
        """Register the session's run; returns its stop flag."""
        with self._count.get_lock():
            self._count.value += 1
            number = self._count.value
        slot = self._slot(session)
        self._stop[slot], self._run[slot] = 0, number
        return StopFlag(self, slot, number)

    def end(self, flag: "StopFlag") -> None:
        if self._run[flag.slot] == flag.number:
            self._run[flag.slot] = 0

    def request(self, session: str | None, wait_s: float = 10.0) -> None:
        """Ask the session's run to stop and wait until it has sent its last update."""
        slot = self._slot(session)
        number = self._run[slot]
        if not number:
            return
        self._stop[slot] = 1
        deadline = time.perf_counter() + wait_s
        while self._run[slot] == number and time.perf_counter() < deadline:
            time.sleep(0.01)


@dataclass(frozen=True)
class StopFlag:
    """One run's view of its session's stop flag."""

    stops: Stops
    slot: int
    number: int

    def is_set(self) -> bool:
        return bool(self.stops._stop[self.slot]) and self.stops._run[self.slot] == self.number


STOPS = Stops()


def stop_run(request: gr.Request):
    STOPS.request(request.session_hash)


def paced(decoders: list[tuple[Callable[[], Iterator], Callable]], stop: StopFlag,
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


class Show:
    """What chat and batch differ in: one request's decoders, how much of it is shown, its
    page updates. `streamed` is the run skeleton they share."""

    note = ""  # why the run ended early: "stopped: ..." or an error's message
    failed = False
    divergences: list[Divergence | None] | None = None  # per row, once both greedy decoders have finished

    def decoders(self) -> list[tuple[Callable[[], Iterator], Callable]]:
        """(make the event stream, add one event to the views), in the order they run."""
        raise NotImplementedError

    def shown(self) -> int:
        """Tokens on the pane being written, which sets how often updates go out."""
        raise NotImplementedError

    def views(self) -> list[RunView]:
        """One view per decoder, for the stopped message."""
        raise NotImplementedError

    def update(self, final: bool) -> Update:
        raise NotImplementedError

    def finish(self) -> None:
        """After the decoders, before the final update."""

    def check_exactness(self, run: Decoding, spec: list[RunView], plain: list[RunView]) -> None:
        """Where greedy EAGLE-3 left plain decoding, per row, once both have finished."""
        if run.config.sampling.greedy and all(view.stats.finished for view in plain):
            self.divergences = [divergence(run.target, prompt, p.stats.output_ids, s.stats.output_ids)
                                for prompt, s, p in zip(run.prompts, spec, plain)]


def streamed(show: Show, session: str | None) -> Iterator[Update]:
    """Run a request's decoders, streaming its updates, until they end, Stop is pressed or an
    error ends them; the final update always goes out."""
    stop = STOPS.start(session)
    try:
        try:
            for _ in paced(show.decoders(), stop, show.shown):
                yield show.update(final=False)
            if stop.is_set():
                show.note = stopped_message(show.views())
        except (ValueError, RuntimeError, MemoryError) as error:
            show.note, show.failed = failure(error), True
        show.finish()
        yield show.update(final=True)
    finally:  # after the last update has gone out (or the request was cancelled)
        STOPS.end(stop)


def checked(request: ChatRequest, batch: bool = False) -> Decoding | None:
    """The request's checked settings, or None after a message on the page naming the problem."""
    try:
        return parse_request(request, batch)
    except (ValueError, TypeError, gr.Error) as error:
        gr.Warning(getattr(error, "message", None) or str(error))
        return None


def node_budget(request: ChatRequest, run: Decoding) -> NodeBudget | None:
    """The request's node budget, one per decode: measured costs (measured on the first run, on
    the device that decodes), or None for the sliders' fixed tree (and for seeded sampling)."""
    return budget_for("measured" if request.node_budget else "fixed", run.target, run.config)


class ChatShow(Show):
    """A chat message: EAGLE-3, then plain decoding, on the same conversation; both panes,
    the charts, the draft tree and the replay."""

    def __init__(self, request: ChatRequest, run: Decoding):
        self.request, self.run = request, run
        self.spec, self.plain = RunView("EAGLE-3"), RunView("plain")
        turn = [{"role": "user", "content": html.escape(request.message)}, {"role": "assistant", "content": ""}]
        self.spec_chat = list(request.spec_chat or []) + turn
        self.plain_chat = list(request.plain_chat or []) + [dict(message) for message in turn]
        self.last_figures = 0.0
        self.budget: NodeBudget | None = None
        self.first = True  # the first update empties the prompt box; later ones leave what is typed during the run

    def decoders(self):
        run, prompt = self.run, self.run.prompts[0]
        policy = AdaptiveDepth(1, max(run.tree.depth, 10)) if self.request.adaptive else None
        self.budget = node_budget(self.request, run)
        drafter = drafter_named(self.request.drafter, run.head, run.tree, policy=policy, budget=self.budget)
        return [(lambda: decode(run.target, prompt, drafter, run.config), lambda event: self.spec.add(event, True)),
                (lambda: decode(run.target, prompt, None, run.config), lambda event: self.plain.add(event, False))]

    def shown(self) -> int:
        return len(self.plain.html) or len(self.spec.html)

    def views(self) -> list[RunView]:
        return [self.spec, self.plain]

    def finish(self) -> None:
        self.request.history.append((self.request.message, self.spec.stats.text))
        self.check_exactness(self.run, [self.spec], [self.plain])

    def update(self, final: bool) -> PageUpdate:
        started = time.perf_counter()
        spec, plain, trees = self.spec, self.plain, self.spec.trees
        self.spec_chat[-1]["content"] = "".join(spec.html)  # append-only, so updates travel as small diffs
        self.plain_chat[-1]["content"] = "".join(plain.html) or ("<em>(plain decoding did not run)</em>" if final else "")
        page = PageUpdate(spec_chat=self.spec_chat, plain_chat=self.plain_chat, history=self.request.history, trees=trees)
        figures = final or time.perf_counter() - self.last_figures > 1 / FIGURE_UPDATES_PER_S
        if figures:
            self.last_figures = time.perf_counter()
        if trees and figures:
            shown = last_drafted(trees)
            page.tree = tree_html(trees, shown, self.run.target.tokenizer)
            page.round_slider = gr.update(maximum=max(2, len(trees)), value=shown)
        if self.note:
            page.summary = f'<span class="{"differs" if self.failed else ""}">{html.escape(self.note)}</span>'
        else:
            page.summary = summary_html([spec], [plain], self.divergences) if spec.stats.times else "EAGLE-3 decoding…"
        if self.first:
            page.message, page.replay = "", ""
        if final:
            page.replay = replay_data(spec, plain)
        self.first = False
        if figures:
            page.charts = chart_data(spec, plain, self.run.tree.depth, 1000 * (time.perf_counter() - started),
                                     self.budget.costs if self.budget else None)
        return page


class BatchShow(Show):
    """The batch panel's lines as one batch, speculatively and then plainly (every batch drafts,
    however large: the point is to see where drafting stops paying off); each row streamed."""

    def __init__(self, request: ChatRequest, run: Decoding):
        self.request, self.run = request, run
        self.spec = [RunView("EAGLE-3") for _ in run.prompts]
        self.plain = [RunView("plain") for _ in run.prompts]

    def decoders(self):
        run = self.run
        drafter = drafter_named(self.request.drafter, run.head, run.tree, budget=node_budget(self.request, run))
        return [(lambda: decode(run.target, run.prompts, drafter, run.config),
                 lambda event: self.spec[event.row].add(event, True)),
                (lambda: decode(run.target, run.prompts, None, run.config),
                 lambda event: self.plain[event.row].add(event, False))]

    def shown(self) -> int:
        return sum(len(view.html) for view in self.spec)

    def views(self) -> list[RunView]:
        return [RunView(views[0].name, pooled(views)) for views in (self.spec, self.plain)]

    def finish(self) -> None:
        self.check_exactness(self.run, self.spec, self.plain)

    def update(self, final: bool) -> BatchUpdate:
        summary = html.escape(self.note) if self.note else summary_html(self.spec, self.plain, self.divergences)
        return BatchUpdate(batch_summary=summary,
                           batch_rows=batch_rows_html(self.run.messages, self.spec, self.plain, self.divergences))


def chat(request: ChatRequest, session: str | None = None) -> Iterator[PageUpdate]:
    """Run EAGLE-3, then plain decoding, on the same prompt; stream both panes and the charts."""
    # The message as typed (a code prompt's trailing newline or indent matters); a history of its own
    request = dataclasses.replace(request, message=request.message or "", history=list(request.history or []))
    run = checked(request)
    if run is None:  # the page shows why; the prompt and the chat stay
        yield PageUpdate(spec_chat=list(request.spec_chat or []), plain_chat=list(request.plain_chat or []),
                         history=request.history)
        return
    yield from streamed(ChatShow(request, run), session)


def batch(request: ChatRequest, session: str | None = None) -> Iterator[BatchUpdate]:
    """Decode the message's lines as one batch (BatchShow); stream the rows."""
    run = checked(request, batch=True)
    if run is None:
        yield BatchUpdate()
        return
    yield from streamed(BatchShow(request, run), session)


def on_zero_gpu(environ) -> bool:
    """Whether this process is a ZeroGPU Space's, as its environment says (SPACES_ZERO_GPU).
    A dedicated GPU Space may have `spaces` installed too, where spaces.GPU does nothing."""
    return environ.get("SPACES_ZERO_GPU", "").strip().lower() in ("1", "true", "yes")


# ZeroGPU's import-time needs, met here because `spaces` reads them when the module loads: the
# handlers that use the GPU decorated, and every pair's weights loaded (and moved to cuda) in
# the main process before any request. Everywhere else main() does the set-up.
ZERO_GPU = spaces is not None and on_zero_gpu(os.environ)
if ZERO_GPU:
    chat, batch = spaces.GPU(duration=120)(chat), spaces.GPU(duration=120)(batch)
    MODELS = load_models(parse_args(sys.argv[1:] if __name__ == "__main__" else []), every=True)


def page_event(run: Callable[[ChatRequest, str | None], Iterator[Update]], outputs: dict) -> Callable:
    """The Gradio event function (and API endpoint) of `run`, chat or batch: a ChatRequest's
    fields in, by name; out, for each update, the components it changes."""

    def respond(request: gr.Request, **fields) -> Iterator[dict]:
        for update in run(ChatRequest(**fields), request.session_hash):
            yield {outputs[name]: value for name, value in update.changes().items()}

    return respond


# ---------------------------------------------------------------------------- layout


def layer_note(target) -> str:
    """Which of eagle3.decoder_layer's lean forwards the target's layers run, if one does, and
    what multiplies their products."""
    kind = forward_kind(target.layers[0])
    products = products_kernel(target.layers[0].mlp.down_proj.weight)
    return "" if kind == "transformers" else f", its decoder layers in {kind} (products: {products})"


def example_prompts(count: int = 8) -> list[str]:
    """First turns of the chat evaluation set, one from each of its first categories."""
    records = read_prompts(os.path.join(ROOT, "assets", "prompts", "chat.jsonl"))
    return [r.first for r in first_per_category(records, 1)][:count]


def build_demo(max_queue: int = 32) -> gr.Blocks:
    """The page, for the model menu in MODELS: its panels, then their events."""
    first, examples = MODELS.first, example_prompts()
    target = MODELS.get(first.name)[1]
    device = target.device.type
    with gr.Blocks(title="EAGLE-3, live") as demo:
        # What is timed depends on the machine: without AMX a tree's rows cost their multiply-adds, so trees cost more.
        gr.Markdown("# EAGLE-3, live\nChat with a real model: each reply is decoded twice from the same "
                    "conversation, by speculative decoding with an EAGLE-3 draft head (left) and by plain decoding "
                    "(right), one after the other, each timed on its own compute: here "
                    f"{device_name(target.device)}, the target in {str(target.dtype).removeprefix('torch.')}"
                    f"{layer_note(target)}.",
                    elem_id="intro")
        gr.HTML(legend_html())
        # The components by name: ChatRequest's and PageUpdate's fields, and the page's buttons
        page = dict(history=gr.State([]), trees=gr.State([]))
        page |= chat_panel(first, examples)
        page |= tree_panel()
        page |= settings_panel(first)
        page |= batch_panel(examples, device)
        connect(page)
    demo.queue(max_size=max_queue, default_concurrency_limit=1)
    return demo


def chat_panel(first: Preset, examples: list[str]) -> dict:
    """The two chat panes, the message box and its buttons, the summary, the replay, the charts."""
    with gr.Row():
        with gr.Column(scale=3):
            # Gradio's own copy buttons would copy the coloured HTML: these copy the last reply's text
            copy = {pane: gr.Button("Copy reply", size="sm", render=False) for pane in ("spec-pane", "plain-pane")}
            with gr.Row():
                spec_chat = gr.Chatbot(label="EAGLE-3", elem_id="spec-pane", elem_classes="tokens",
                                       render_markdown=False, height=420, feedback_options=None,
                                       buttons=[copy["spec-pane"]])
                plain_chat = gr.Chatbot(label="Plain decoding", elem_id="plain-pane", elem_classes="tokens",
                                        render_markdown=False, height=420, feedback_options=None,
                                        buttons=[copy["plain-pane"]])
            # The first example is already in the box: Generate sends the text the visitor sees.
            message = gr.Textbox(examples[0], label="Message", lines=3, elem_id="prompt",
                                 placeholder="Ask a question, or pick an example below")
            with gr.Row():
                send = gr.Button("Generate", variant="primary", elem_id="send")
                stop = gr.Button("Stop", elem_id="stop")
                clear = gr.Button("Clear", elem_id="clear")
            summary = gr.HTML("", elem_id="summary")
            replay = gr.HTML("", html_template=read_asset("replay.html"), js_on_load=read_asset("replay.js"),
                             elem_id="replay")
            gr.Examples(examples, inputs=[message], label="Examples")
        with gr.Column(scale=2):
            charts = gr.HTML(empty_charts(first.tree.depth), html_template=read_asset("charts.html"),
                             js_on_load=read_asset("live_charts.js"),
                             head=f'<script src="/gradio_api/file={PLOTLY_JS}"></script>', elem_id="charts")
    return dict(spec_chat=spec_chat, plain_chat=plain_chat, message=message, send=send, stop=stop, clear=clear,
                summary=summary, replay=replay, charts=charts, copy=copy)


def tree_panel() -> dict:
    with gr.Accordion("Draft tree", open=True):
        round_slider = gr.Slider(1, 2, value=1, step=1, label="Round (by default the last that drafted)", elem_id="round")
        tree = gr.HTML(render_tree(None, [], []), elem_id="tree")
    return dict(round_slider=round_slider, tree=tree)


def settings_panel(first: Preset) -> dict:
    """The pair, the drafter, the tree and sampling settings: a request's inputs."""
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
            budget = gr.Checkbox(True, label="Size each tree by measured costs (total draft tokens: the most)",
                                 elem_id="node-budget")
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
    return dict(preset=preset, drafter=drafter, greedy=greedy, creative=creative, show_rejected=show_rejected,
                adaptive=adaptive, node_budget=budget, depth=depth, top_k=top_k, total_tokens=total,
                temperature=temperature, top_p=top_p, max_new_tokens=max_new, preset_note=preset_note)


def batch_panel(examples: list[str], device: str) -> dict:
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
    return dict(batch_prompts=batch_prompts, batch_send=batch_send, batch_summary=batch_summary, batch_rows=batch_rows)


def connect(page: dict) -> None:
    """The page's events: Generate (and Enter), the batch, Stop, Clear, and the small controls."""
    inputs = {f.name: page[f.name] for f in dataclasses.fields(ChatRequest)}
    outputs = {f.name: page[f.name] for f in dataclasses.fields(PageUpdate)}
    batch_inputs = dict(inputs, message=page["batch_prompts"])
    batch_outputs = {f.name: page[f.name] for f in dataclasses.fields(BatchUpdate)}
    # always_last: a Generate clicked while a run is still ending (just after Stop) runs next, not never
    page["send"].click(page_event(chat, outputs), inputs_kwargs=inputs, outputs=list(outputs.values()),
                       concurrency_id="device", api_name="generate", trigger_mode="always_last")
    page["message"].submit(page_event(chat, outputs), inputs_kwargs=inputs, outputs=list(outputs.values()),
                           concurrency_id="device", api_name=False, trigger_mode="always_last")
    page["batch_send"].click(page_event(batch, batch_outputs), inputs_kwargs=batch_inputs,
                             outputs=list(batch_outputs.values()), concurrency_id="device", api_name="generate_batch",
                             trigger_mode="always_last")
    cleared = [page[name] for name in ("spec_chat", "plain_chat", "history", "summary", "tree", "trees", "charts",
                                       "replay", "batch_summary", "batch_rows")]

    def empty_page(depth):
        return [], [], [], "", render_tree(None, [], []), [], empty_charts(int(depth)), "", "", ""

    page["stop"].click(stop_run, None, None, concurrency_id="stop", concurrency_limit=None, api_name=False)
    page["clear"].click(stop_run, None, None, concurrency_id="stop", concurrency_limit=None,
                        api_name=False).then(empty_page, page["depth"], cleared)
    page["round_slider"].release(lambda kept, i, name: tree_html(kept, i, MODELS.get(name)[1].tokenizer),
                                 [page["trees"], page["round_slider"], page["preset"]], page["tree"])
    for pane, button in page["copy"].items():
        button.click(None, None, None, js=COPY_REPLY_JS.replace("PANE", pane))
    page["greedy"].click(lambda: (0.0, 1.0), None, [page["temperature"], page["top_p"]])
    page["creative"].click(lambda: (0.8, 0.95), None, [page["temperature"], page["top_p"]])
    page["preset"].change(preset_changed, page["preset"], [page[name] for name in (
        "depth", "top_k", "total_tokens", "drafter", "preset_note")])
    page["show_rejected"].change(None, page["show_rejected"], None,
                                 js="(show) => { document.body.classList.toggle('hide-rejected', !show); }")


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
    global MODELS, RUNNER
    args = parse_args(argv)
    transformers.utils.logging.disable_progress_bar()
    if MODELS is None:  # (ZeroGPU loaded them at import)
        try:
            MODELS = load_models(args)
        except (ValueError, FileNotFoundError, gr.Error) as error:
            sys.exit(f"error: {getattr(error, 'message', None) or error}")
    # Decoding on this (the main) thread, which serve_forever hands over; ZeroGPU decodes in a
    # process of its own instead.
    RUNNER = MainThreadRunner(serving=not ZERO_GPU)
    gr.set_static_paths([PLOTLY_JS])
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
