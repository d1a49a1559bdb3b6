"""python -m eagle3.generate on a tiny target directory with a real tokenizer."""

import os
import re
import subprocess
import sys
from types import SimpleNamespace

from eagle3.acceptance import TokenState
from eagle3.events import Token
from eagle3.generate import main as generate_main, read_prompts, render

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARY = re.compile(r"new tokens (\d+) \| rounds (\d+)(?: \(\d+ plain\))? \| tau ([\d.]+) \| nodes per round [\d.]+ \| "
                     r"([\d.]+) tokens/s \| stop (\w+)")


def cli(*args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "eagle3.generate", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


def cli_in_process(capsys, *args) -> SimpleNamespace:
    """The CLI's main in this process, as `cli` gives it (returncode, stdout, stderr) without
    an interpreter's start for each call: for the checks of refused input, where an uncaught
    exception fails the test by itself."""
    try:
        code = generate_main(list(args))
    except SystemExit as exit:  # argparse's refusals
        code = exit.code
    out, err = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def test_cli_greedy_sampled_and_plain(model_dirs):
    target, head = model_dirs
    # float32: bfloat16 exactness is established on real shapes (tests/test_invariant.py); on this tiny random
    # target's shapes oneDNN's bfloat16 rows need not keep their bits, and greedy outputs can part.
    common = ["--target", target, "--draft", head, "--prompt", "def add(a, b):", "--max-new-tokens", "24", "--device", "cpu",
              "--dtype", "float32"]
    spec = cli(*common, "--depth", "4", "--top-k", "4", "--total-tokens", "16")
    assert spec.returncode == 0, spec.stderr
    assert "\033[" not in spec.stdout  # no colour when not a terminal
    lines = spec.stdout.rstrip("\n").split("\n")
    match = SUMMARY.fullmatch(lines[-1])
    assert match and int(match.group(1)) == 24 and match.group(5) == "max_new_tokens"
    assert spec.stdout.startswith("def add(a, b):")

    plain = cli(*common, "--plain")
    assert plain.returncode == 0, plain.stderr
    assert re.fullmatch(r"new tokens 24 \| [\d.]+ tokens/s \| stop max_new_tokens", plain.stdout.rstrip("\n").split("\n")[-1])
    assert plain.stdout.rsplit("\n", 2)[0] == spec.stdout.rsplit("\n", 2)[0]  # same text, greedy

    sampled = [cli(*common, "--temperature", "0.8", "--top-p", "0.9", "--seed", "3") for _ in range(2)]
    assert sampled[0].returncode == 0, sampled[0].stderr
    assert sampled[0].stdout.rsplit("\n", 2)[0] == sampled[1].stdout.rsplit("\n", 2)[0]


def test_cli_decodes_several_prompts_as_a_batch(model_dirs):
    target, head = model_dirs
    common = ["--target", target, "--draft", head, "--max-new-tokens", "16", "--device", "cpu"]
    batch = cli(*common, "--prompt", "def add(a, b):", "--prompt", "class Stack:", "--depth", "3", "--top-k", "2",
                "--total-tokens", "6")
    assert batch.returncode == 0, batch.stderr
    for row, prompt in ((1, "def add(a, b):"), (2, "class Stack:")):
        alone = cli(*common, "--prompt", prompt, "--plain")
        text = alone.stdout.rsplit("\n", 2)[0]  # the prompt and its greedy reply
        assert f"[{row}] {text}\n[{row}] new tokens 16 | rounds" in batch.stdout


def test_cli_reports_bad_input(model_dirs, tmp_path, capsys):
    target, head = model_dirs
    missing = cli_in_process(capsys, "--target", str(tmp_path / "nope"), "--draft", head, "--prompt", "x")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert f"error: target: '{tmp_path / 'nope'}' does not exist" in missing.stderr
    for flag, message in (("--depth", "depth: 0 is outside [1, 64]"), ("--top-k", "top_k: 0 is outside [1, 64]"),
                          ("--total-tokens", "total_tokens: 0 is outside [2, 1024]")):
        zero = cli_in_process(capsys, "--target", target, "--draft", head, "--prompt", "x", flag, "0")  # refused, never the preset's
        assert zero.returncode == 2 and message in zero.stderr, zero.stderr
    bad_file = tmp_path / "prompt.txt"
    bad_file.write_bytes(b"def f():\xff\xfe\n")
    result = cli_in_process(capsys, "--target", target, "--draft", head, "--prompt-file", str(bad_file))
    assert result.returncode == 2 and "not UTF-8" in result.stderr
    result = cli_in_process(capsys, "--target", target, "--draft", head, "--prompt", "x", "--top-p", "1.5")
    assert result.returncode == 2 and "top_p: 1.5 is outside (0, 1]" in result.stderr
    assert "--total-tokens" in cli("--help").stdout  # the module runs as a program


def test_a_chat_prompt_is_shown_as_typed_not_as_its_template(tokenizer):
    from tests.test_prompts import TEMPLATE

    chat = tokenizer.__class__(tokenizer_object=tokenizer.backend_tokenizer, eos_token="<eos>")
    chat.chat_template = TEMPLATE
    args = SimpleNamespace(prompt_file=None, prompt=["What is a prime?"])
    (shown, ids), = read_prompts(args, chat, chat=True)
    assert shown == "What is a prime?\n" and chat.decode(ids).startswith("<user>What is a prime?")


def test_render_colours_each_state():
    assert render(Token(1, "a", TokenState.ACCEPTED), True, True) == "\033[32ma\033[0m"
    assert render(Token(1, "b", TokenState.REJECTED), True, True) == "\033[9;31mb\033[0m"
    assert render(Token(1, "b", TokenState.REJECTED), True, False) == ""
    assert render(Token(1, "b", TokenState.REJECTED), False, True) == ""
    assert render(Token(1, "c", TokenState.BONUS), False, True) == "c"
