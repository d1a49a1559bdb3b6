"""The Gradio app: rendering, a streamed run over gradio_client, and a real browser."""

import dataclasses
import html
import json
import re
import time
from types import SimpleNamespace

import pytest
import torch

import app
from eagle3.budget import MEASURED_NODES
from eagle3.decoder_layer import forward_kind
from eagle3.report import system_chromium
from eagle3.target import device_name
from tests.load import free_port, headless_page, start_app


@pytest.fixture(autouse=True, scope="module")
def models():
    """The model menu of `python app.py` with no flags, as main() loads it."""
    app.MODELS = app.load_models(app.parse_args([]))
    yield app.MODELS
    app.MODELS = None


PROMPT = 'def is_even(n):\n    """Return True if n is even."""\n'


def request(message=PROMPT, history=(), preset=None, depth=5, top_k=2, total_tokens=10, temperature=0.0, top_p=1.0,
            max_new_tokens=48, spec_chat=(), drafter="eagle3") -> app.ChatRequest:
    return app.ChatRequest(message, preset or app.MODELS.first.name, depth, top_k, total_tokens, temperature, top_p,
                           max_new_tokens, spec_chat=list(spec_chat), history=list(history), drafter=drafter)


def test_respond_streams_and_checks_losslessness():
    updates = list(app.chat(request()))
    assert len(updates) >= 2
    final = updates[-1]
    spec_chat, plain_chat, history, charts = final.spec_chat, final.plain_chat, final.history, final.charts
    tree, summary, trees, replay = final.tree, final.summary, final.trees, final.replay
    assert "lossless: identical to plain decoding" in summary and "done." in summary
    assert 'class="tok accepted' in spec_chat[-1]["content"]
    strip = lambda s: re.sub(r"<[^>]+>", "", re.sub(r'<span class="tok rejected[^>]*>.*?</span>', "", s, flags=re.S))  # noqa: E731
    reply = strip(spec_chat[-1]["content"])
    assert reply == strip(plain_chat[-1]["content"])
    data = json.loads(charts)
    rounds = len(data["rounds"]["round"])
    assert rounds == len(trees) + 1 or rounds == len(trees)  # the last round may have had no room to draft
    # The node budget: the measured verification curve it priced trees by, and the sizes it chose
    assert data["budget"]["nodes"][0] == 1 and data["budget"]["steps"][0] == 1.0 and len(data["budget"]["steps"]) == len(MEASURED_NODES)
    assert sum(count for _, count in data["budget"]["verified"]) == rounds
    assert max(n for n, _ in data["budget"]["verified"]) <= 10 and "nodes/round" in summary
    plain_seconds = data["speed"]["plain"]["seconds"]
    assert plain_seconds and plain_seconds == sorted(plain_seconds) and len(data["speedup"]["tokens"]) > 0
    assert "<svg" in tree and history == [(PROMPT, html.unescape(reply))]
    frames = {d["name"]: d["frames"] for d in json.loads(replay)["decoders"]}  # what "Replay side by side" plays
    assert "".join(h for _, h in frames["EAGLE-3"]) == spec_chat[-1]["content"]
    assert "".join(h for _, h in frames["plain"]) == plain_chat[-1]["content"]
    assert [t for t, _ in frames["plain"]] == plain_seconds


def test_the_hybrid_drafter_marks_copied_tokens_and_stays_lossless():
    quote = "Repeat exactly: the quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog."
    *_, final = app.chat(request(quote, drafter="hybrid", max_new_tokens=40))
    assert "lossless: identical to plain decoding" in final.summary
    assert " copied" in final.spec_chat[-1]["content"]  # some accepted drafts came from the context
    assert json.loads(final.charts)["sources"].get("copy", 0) + json.loads(final.charts)["sources"].get("both", 0) > 0


def test_the_generate_event_takes_named_fields_and_sends_only_what_changes():
    demo = app.build_demo()
    intro = next(block.value for block in demo.blocks.values() if getattr(block, "elem_id", None) == "intro")
    assert f"here {device_name(torch.device('cpu'))}, the target in " in intro  # what the times were measured on
    layers = forward_kind(app.MODELS.get(app.MODELS.first.name)[1].layers[0])
    assert (f"its decoder layers in {layers}" in intro) == (layers != "transformers")
    event = next(fn for fn in demo.fns.values() if fn.api_name == "generate")
    names = {f.name for f in dataclasses.fields(app.ChatRequest)}
    assert set(event.input_keyword_names) == names  # by name, not by position
    fields = dataclasses.asdict(request(max_new_tokens=8))
    updates = list(event.fn(SimpleNamespace(session_hash="s0"), **fields))
    outputs = dict(zip([f.name for f in dataclasses.fields(app.PageUpdate)], event.outputs))
    by_component = {component: name for name, component in outputs.items()}
    sent = [{by_component[component] for component in update} for update in updates]
    assert "message" in sent[0] and not any("message" in names for names in sent[1:])  # only what changes is sent
    final = {by_component[component]: value for component, value in updates[-1].items()}
    assert "lossless: identical to plain decoding" in final["summary"] and final["history"][-1][0] == PROMPT


def test_the_tree_and_charts_follow_at_most_figure_updates_per_s(monkeypatch):
    """The panes go out with every update; the tree and the charts, which the page redraws whole,
    only when due (here once at the start, then with the final update)."""
    monkeypatch.setattr(app, "FIGURE_UPDATES_PER_S", 1e-9)
    monkeypatch.setattr(app, "UPDATES_PER_S", 1000)
    updates = list(app.chat(request(max_new_tokens=32)))
    assert len(updates) >= 4
    assert all(update.spec_chat is not None for update in updates)
    charts = [update.charts is not None for update in updates]
    assert charts[-1] and sum(charts[:-1]) <= 1 and updates[-1].tree is not None
    assert sum(update.tree is not None for update in updates[:-1]) <= 1


def test_a_batch_streams_its_rows_and_each_row_is_its_prompt_decoded_alone():
    prompts = ["What is a prime number?", "Name three rivers.", "What is 7 times 8?"]
    updates = list(app.batch(request("\n".join(prompts) + "\n\n", max_new_tokens=24, drafter="hybrid")))
    # Plain decoding's part is announced while it runs (whether an update also falls after its last
    # round, before the final one, depends on the pace of the machine)
    assert len(updates) >= 2 and any("plain decoding…" in update.batch_summary for update in updates[:-1])
    final = updates[-1]
    assert final.batch_summary.startswith("batch of 3 | ") and "lossless: identical to plain decoding" in final.batch_summary
    rows = re.findall(r'<div class="tokens batch-reply">(.*?)</div></div>', final.batch_rows, flags=re.S)
    assert len(rows) == 3 and final.batch_rows.count("identical to plain") == 3
    strip = lambda s: html.unescape(re.sub(r"<[^>]+>", "", re.sub(r'<span class="tok rejected[^>]*>.*?</span>', "", s,
                                                                    flags=re.S)))  # noqa: E731
    for prompt, row in zip(prompts, rows):
        *_, alone = app.chat(request(prompt, max_new_tokens=24))
        assert alone.history[-1][1] == strip(row)  # the batch row is what the chat answers to the prompt alone
    too_many = list(app.batch(request("\n".join(["hi"] * (app.MAX_BATCH + 1)))))
    assert len(too_many) == 1 and too_many[0].changes() == {}  # a message on the page; nothing changes


def test_stop_ends_the_run_with_a_final_update():
    run = app.chat(request(max_new_tokens=256), "s1")
    first = next(run)
    assert first.message == "" and "EAGLE-3" in first.summary  # the first update empties the prompt box
    app.STOPS.request("s1", wait_s=0)  # as the Stop button does, without waiting for the end
    *middle, final = run
    assert middle == [] and final.message is None  # no update after the stop but the final one: the prompt box stays
    assert re.fullmatch(r'<span class="">stopped: EAGLE-3 wrote \d+ tokens, plain wrote 0 tokens</span>', final.summary)
    assert final.spec_chat[-1]["content"] and final.plain_chat[-1]["content"] == "<em>(plain decoding did not run)</em>"
    assert final.history[-1][0] == PROMPT and final.history[-1][1]  # the partial reply joins the chat
    started = time.perf_counter()
    app.STOPS.request("s1")  # the run has ended: nothing to wait for
    assert time.perf_counter() - started < 1


def test_a_long_chat_drops_its_oldest_turns(monkeypatch):
    name = app.MODELS.first.name
    preset, target, _ = app.MODELS.get(name)
    assert preset.chat
    history = [("tell me about cats " * 30, "cats are nice " * 30), ("and dogs?", "dogs are loyal")]
    monkeypatch.setattr(app, "MAX_CONTEXT", 200)
    run = app.parse_request(request("and birds?", history, name, 6, 4, 24, max_new_tokens=64))
    text = target.tokenizer.decode(run.prompts[0])
    assert "cats" not in text and "and dogs?" in text and "dogs are loyal" in text and text.count("and birds?") == 1
    assert len(run.prompts[0]) <= 200 - run.config.max_new_tokens
    with pytest.raises(ValueError, match="the message is .* tokens with the chat template"):
        app.parse_request(request("birds " * 200, history, name, 6, 4, 24, max_new_tokens=64))


def test_bad_input_keeps_history():
    name = app.MODELS.first.name
    history = [("earlier", "answer")]
    for message, model, args in (("", name, (5, 2, 10, 0.0, 1.0, 16)), ("x", name, (5, 2, 1, 0.0, 1.0, 16)),
                                 ("x", name, (5, 8, 3, 0.0, 1.0, 16)), ("x", name, (5, 2, 10, -1.0, 1.0, 16)),
                                 ("x", name, (5, 2, 10, 0.0, 0.0, 16)), ("x", name, (5, 2, 10, 0.0, 1.0, None)),
                                 ("x" * (app.MAX_PROMPT_CHARS + 1), name, (5, 2, 10, 0.0, 1.0, 16)),
                                 ("x", "/etc | /tmp", (5, 2, 10, 0.0, 1.0, 16))):
        updates = list(app.chat(request(message, history, model, *args, spec_chat=[{"role": "user", "content": "earlier"}])))
        assert len(updates) == 1 and updates[0].history == history and updates[0].spec_chat[0]["content"] == "earlier"
    with pytest.raises(ValueError, match="drafter: 'copycat' is not one of eagle3, lookup, hybrid"):
        app.parse_request(request("x", drafter="copycat"))
    for fields, message in ((dict(max_new_tokens=None), "Max new tokens: empty; enter a number"),
                            (dict(max_new_tokens=""), "Max new tokens: empty; enter a number"),
                            (dict(depth="deep"), "Draft depth k: 'deep'; enter a number"),
                            (dict(top_k=2.5), "Tree top_k: 2.5 is not a whole number"),
                            (dict(depth=0), r"depth: 0 is outside \[1, 64\]"),
                            (dict(max_new_tokens=app.MAX_NEW_TOKENS + 1), "above this server's limit")):
        with pytest.raises(ValueError, match=message):
            app.parse_request(request("x", **fields))


def test_model_choice_is_closed_unless_the_operator_opens_it(model_dirs):
    import gradio as gr

    target, head = model_dirs
    with pytest.raises(gr.Error, match="not offered by this server"):
        app.Models([], "cpu", "float32").get(f"{target} | {head}")
    opened = app.Models([], "cpu", "float32", allow_any=True)
    with pytest.raises(gr.Error, match="not of the form 'TARGET | HEAD'"):
        opened.get(target)
    preset, loaded, _ = opened.get(f"{target} | {head}")
    assert preset.target == target and loaded.tokenizer is not None
    assert preset.chat is False  # decided by its tokenizer, which has no chat template


def test_a_lazy_load_s_device_error_is_a_message(monkeypatch, model_dirs):
    """ZeroGPU refuses CUDA in the main process with a RuntimeError: the menu says so, the page stays."""
    import gradio as gr

    def refused(*args, **kwargs):
        raise RuntimeError("CUDA must not be initialized in the main process")

    target, head = model_dirs
    models = app.Models([], "cpu", "float32", allow_any=True)
    monkeypatch.setattr(app, "load_target", refused)
    with pytest.raises(gr.Error, match="CUDA must not be initialized"):
        models.get(f"{target} | {head}")


def test_device_error_is_reported_and_the_app_recovers(monkeypatch):
    import torch

    name = app.MODELS.first.name
    target = app.MODELS.get(name)[1]
    forward, calls = target.forward, []

    def failing_forward(*args, **kwargs):
        calls.append(1)
        if len(calls) == 6:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(*args, **kwargs)

    monkeypatch.setattr(target, "forward", failing_forward)
    *_, final = app.chat(request())
    assert "generation stopped: OutOfMemoryError: CUDA out of memory" in final.summary
    assert final.spec_chat[-1]["content"] and final.history[-1][0] == PROMPT  # the partial output and the history stay
    monkeypatch.setattr(target, "forward", forward)
    *_, final = app.chat(request(history=final.history))
    assert "lossless: identical to plain decoding" in final.summary and len(final.history) == 2


# ---------------------------------------------------------------------------- served app


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`python app.py` as a user runs it (decoding on its main thread), on a free port."""
    port = free_port()
    with open(tmp_path_factory.mktemp("app") / "app.log", "w") as log:
        server = start_app(port, log)
        yield server, f"http://127.0.0.1:{port}/"
        server.terminate()
        server.wait(timeout=30)


def test_gradio_client_streams_and_cancels(served):
    from gradio_client import Client

    _, url = served
    client = Client(url, verbose=False)
    name = app.MODELS.first.name
    settings = dict(preset=name, depth=5, top_k=2, total_tokens=10, temperature=0.0, top_p=1.0)  # the API takes names
    job = client.submit(message=PROMPT, max_new_tokens=64, adaptive=True, **settings, api_name="/generate")
    updates = list(job)
    assert len(updates) >= 2
    final = job.outputs()[-1]
    assert "lossless: identical to plain decoding" in final[-2]
    assert final[1][-1]["content"] and final[2][-1]["content"]  # both panes (final[0] is the cleared prompt)

    job = client.submit(message=PROMPT, max_new_tokens=1024, **settings, api_name="/generate")
    deadline = time.time() + 60
    while not job.outputs() and time.time() < deadline:
        time.sleep(0.05)
    assert job.outputs() and not job.done()
    job.cancel()
    # The server ends the cancelled run at its next update (both decoders' 1024 tokens would take
    # minutes here), so a short request sent next is served within seconds, not after that run.
    again = client.submit(message="class Stack:\n", max_new_tokens=16, **settings, api_name="/generate")
    assert "done." in again.result(timeout=90)[-2]


CHROMIUM = system_chromium()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_real_browser(served):
    from playwright.sync_api import sync_playwright

    _, url = served
    chart_text_color = "document.querySelector('#chart-tau').layout.font.color"
    with sync_playwright() as p:
        page = headless_page(p, CHROMIUM)
        page.goto(url)
        assert page.locator("#prompt textarea").input_value() == app.example_prompts()[0]  # Generate sends it
        charts = "['tau', 'speed', 'speedup', 'accept'].map((name) => document.querySelector('#chart-' + name))"
        page.wait_for_function(f"{charts}.every((node) => node.data !== undefined)", timeout=30_000)
        page.evaluate(f"window.chartNodes = {charts}")
        # Before any run: no figures yet, no replay boxes, the model menu's name shown whole.
        assert page.locator("#charts .chart-status").inner_text() == "Charts draw here while the decoders run."
        assert not page.locator("#replay .replay-panes").is_visible()
        assert page.evaluate("(() => { const box = document.querySelector('#preset input');"
                             " return box.scrollWidth <= box.clientWidth; })()")
        max_new = page.locator("#max-new input")
        max_new.fill("64")  # both decoders, the replay and every check below, in half the default's time
        max_new.press("Enter")
        page.locator("#prompt textarea").fill(PROMPT)
        page.locator("#send").click()
        page.wait_for_function("document.querySelectorAll('#spec-pane .tok').length > 3", timeout=60_000, polling=20)
        # Counted over both decoders' speed curves: the plain decoder runs after the speculative
        # one, which on a fast CPU may finish 64 tokens before the page first looks.
        points = "document.querySelector('#chart-speed').data.reduce((n, trace) => n + trace.x.length, 0)"
        points_midway = page.evaluate(points)
        page.locator("#summary").get_by_text("done.").wait_for(timeout=120_000)
        # The charts are redrawn in place: the same nodes as before the run, with more points.
        assert page.evaluate(f"window.chartNodes.every((node, i) => node === {charts}[i] && node.isConnected)")
        assert page.evaluate(points) > points_midway
        # The panes' labels and buttons sit above the scrolling messages, never over them.
        assert page.evaluate("""['#spec-pane', '#plain-pane'].every((pane) => {
            const label = document.querySelector(pane + ' [data-testid="block-label"]').getBoundingClientRect();
            return label.bottom <= document.querySelector(pane + ' .bubble-wrap').getBoundingClientRect().top; })""")
        assert page.locator("#spec-pane .tok.accepted").count() > 0
        assert page.locator("#plain-pane .tok.plain").count() > 0
        assert "lossless: identical to plain decoding" in page.locator("#summary").inner_text()
        # Each pane's copy button copies its reply's text (rejected drafts left out), not its HTML.
        copied = []
        for pane in ("spec-pane", "plain-pane"):
            page.locator(f'#{pane} button[aria-label="Copy reply"]').click()
            copied.append(page.evaluate("document.body.dataset.copied"))
        assert copied[0] == copied[1] and len(copied[0]) > 10 and "<span" not in copied[0]
        # The tree's round slider counts the rounds the summary counts.
        rounds = int(re.search(r"rounds (\d+)", page.locator("#summary").inner_text()).group(1))
        assert page.locator("#round input[type=range]").get_attribute("max") == str(rounds)
        # It shows the last round that drafted (the very last often has no room left for drafts).
        shown = re.search(rf"Round (\d+) of {rounds}: (\d+) drafted nodes", page.locator("#tree").inner_text())
        assert shown and page.locator("#round input[type=number]").input_value() == shown.group(1)
        # Live Plotly charts, drawn in place from the installed plotly.js (no network here).
        assert page.evaluate("typeof Plotly") == "object"
        assert page.evaluate("document.querySelector('#chart-speed').data.map(t => t.name)") == ["EAGLE-3", "plain"]
        assert page.evaluate("document.querySelector('#chart-tau').data[1].y.length") > 0
        assert page.evaluate("document.querySelector('#chart-budget').data[1].x.length") == len(MEASURED_NODES)  # the measured curve
        updates = int(page.locator("#charts .chart-status").inner_text().split()[0])
        assert updates >= 5
        # The replay plays both replies again at their measured pace, with a time line on the chart.
        page.locator("#replay .replay-button").click()
        page.locator('#replay .replay[data-state="finished"]').wait_for(timeout=120_000)
        # Each pane finishes at its measured time ("finished at 3.21 s"), the faster decoder first.
        ends = {name: float(page.locator(f'#replay .tokens[data-decoder="{name}"]').locator("..")
                            .locator(".replay-done").inner_text().split()[2]) for name in ("EAGLE-3", "plain")}
        order = page.locator("#replay .replay").get_attribute("data-finished").split(",")
        assert sorted(order) == sorted(ends)
        if abs(ends["EAGLE-3"] - ends["plain"]) > 0.1:  # not finished within one animation frame of each other
            assert order == sorted(ends, key=ends.get)
        assert page.locator('#replay .tokens[data-decoder="EAGLE-3"] .tok').count() == page.locator("#spec-pane .tok").count()
        assert page.locator('#replay .tokens[data-decoder="plain"] .tok').count() == page.locator("#plain-pane .tok").count()
        assert page.evaluate("document.querySelector('#chart-speed').layout.shapes.length") == 1
        # the last round's tree (its path may be empty), or why it drafted nothing (no room left)
        assert page.locator("#tree svg .node").count() > 1 or "nothing drafted" in page.locator("#tree").inner_text()

        # Bad input: a message on the page; the chat stays as it was.
        tokens = page.locator("#spec-pane .tok").count()
        page.locator("#prompt textarea").fill("   ")
        page.locator("#send").click()
        page.get_by_test_id("toast-body").filter(has_text="prompt: empty").wait_for(timeout=30_000)
        assert page.locator("#spec-pane .tok").count() == tokens
        max_new.fill("")  # an emptied box is named, never read as some default
        page.locator("#prompt textarea").fill(PROMPT)
        page.locator("#send").click()
        page.get_by_test_id("toast-body").filter(has_text="Max new tokens: empty").wait_for(timeout=30_000)
        assert page.locator("#spec-pane .tok").count() == tokens

        # Stop in the middle of a run, and at once type and send the next message: the stopped run
        # ends with its final update (the plain pane says it did not run), the new message is not
        # wiped by that update, and it runs next, to the end.
        max_new.fill("1024")  # a run long enough that Stop lands in the EAGLE-3 half however fast it decodes
        max_new.press("Enter")
        page.locator("#prompt textarea").fill("class Stack:\n")
        page.locator("#send").click()
        page.wait_for_function(f"document.querySelectorAll('#spec-pane .tok').length > {tokens}", timeout=60_000,
                               polling=20)
        page.evaluate("""window.sawStopped = false; const summary = document.querySelector('#summary');
            new MutationObserver(() => { window.sawStopped ||= summary.textContent.includes('stopped: EAGLE-3 wrote'); })
                .observe(summary, { subtree: true, childList: true, characterData: true })""")
        page.locator("#stop").click()
        max_new.fill("64")
        max_new.press("Enter")
        page.locator("#prompt textarea").fill(PROMPT)
        page.locator("#send").click()
        page.locator("#summary").get_by_text("done.").wait_for(timeout=120_000)
        assert "lossless: identical to plain decoding" in page.locator("#summary").inner_text()
        assert page.locator("#plain-pane").get_by_text("(plain decoding did not run)").count() == 1
        # the stopped run's message, once (the hybrid drafter's reply may quote it too)
        assert page.locator('#spec-pane [data-testid="user"]').filter(has_text="class Stack:").count() == 1
        assert page.evaluate("window.sawStopped")  # the stopped run's own summary, before the next run's

        # The batch panel: its example prompts decoded as one batch, each row coloured, lossless.
        page.locator("#batch").get_by_text("Batch: several prompts decoded together").click()
        page.locator("#batch-send").click()
        page.locator("#batch-summary").get_by_text("done.").wait_for(timeout=180_000)
        assert "batch of 4" in page.locator("#batch-summary").inner_text()
        assert "lossless: identical to plain decoding" in page.locator("#batch-summary").inner_text()
        assert page.locator("#batch-rows .batch-row").count() == 4
        assert page.locator("#batch-rows .batch-row").nth(3).locator(".tok.accepted").count() > 0

        # The charts take their colours from the page's theme: light text on the dark one.
        light_text = page.evaluate(chart_text_color)
        page.goto(url + "?__theme=dark")
        page.wait_for_function("document.querySelector('#chart-tau')?.layout !== undefined", timeout=30_000)
        assert page.evaluate(chart_text_color) != light_text
        page.context.browser.close()


def test_a_target_flag_finds_its_preset_as_the_clis_do():
    from eagle3.presets import PRESETS, pair_preset

    llama = "meta-llama/Llama-3.1-8B-Instruct"
    assert pair_preset(llama, None) is next(p for p in PRESETS if p.target == llama)  # its head, chat and tree
    mine = pair_preset(llama, "runs/my-head")
    assert mine.head == "runs/my-head" and mine.chat is True and mine.tree == pair_preset(llama, None).tree
    assert pair_preset("runs/other-model", "runs/head").chat is None  # decided by its tokenizer's template
    with pytest.raises(ValueError, match="--draft: no head is known for --target runs/other-model"):
        pair_preset("runs/other-model", None)


def test_zero_gpu_is_told_by_the_environment():
    assert app.on_zero_gpu({"SPACES_ZERO_GPU": "true"}) and app.on_zero_gpu({"SPACES_ZERO_GPU": "1"})
    assert not app.on_zero_gpu({}) and not app.on_zero_gpu({"SPACES_ZERO_GPU": "false"})


def test_zero_gpu_loads_every_pair_at_start_and_leaves_out_those_that_fail(capsys):
    """ZeroGPU's GPU workers cannot load a model: every pair is loaded before serving (here the
    two embedded ones; the hub's fail offline and leave the menu, their reason printed)."""
    models = app.load_models(app.parse_args([]), every=True)
    assert list(models.loaded) == list(models.presets) == [p.name for p in app.PRESETS[:2]]
    assert capsys.readouterr().err.count("; left out") == len(app.PRESETS) - 2
    with pytest.raises(app.gr.Error, match="on ZeroGPU every model is loaded at start, and this one is not among"):
        models.get(app.PRESETS[2].name)


def test_stop_reaches_a_run_in_a_forked_process():
    """As ZeroGPU runs a GPU call: in a worker forked from the server, which Stop's flag reaches."""
    import multiprocessing

    stops = app.Stops()

    def run():  # a decode loop that checks its flag between rounds
        flag = stops.start("s2")
        started.set()
        deadline = time.perf_counter() + 30
        while not flag.is_set() and time.perf_counter() < deadline:
            time.sleep(0.005)
        stopped.value = flag.is_set()
        stops.end(flag)

    context = multiprocessing.get_context("fork")
    started, stopped = context.Event(), context.Value("b", 0)
    worker = context.Process(target=run)
    worker.start()
    assert started.wait(30)
    began = time.perf_counter()
    stops.request("s2")  # returns once the worker's run has ended
    assert stopped.value and time.perf_counter() - began < 5
    worker.join(10)
    stops.request("s1", wait_s=0)  # another session: nothing runs, nothing waits


def test_loaded_pairs_are_kept_while_they_fit_the_budget(model_dirs):
    target, head = model_dirs
    names = [f"{target} | {head}", f"{target}/ | {head}"]  # the same pair under two names: two loads
    one = app.pair_bytes(*app.Models([], "cpu", "float32", allow_any=True).get(names[0])[1:])
    roomy = app.Models([], "cpu", "float32", allow_any=True, budget=3 * one)
    tight = app.Models([], "cpu", "float32", allow_any=True, budget=int(1.5 * one))
    for models in (roomy, tight):
        for name in (*names, names[0]):
            models.get(name)
    assert list(roomy.loaded) == [names[1], names[0]]  # both kept, the last used last
    assert list(tight.loaded) == [names[0]]  # only the last used fits
