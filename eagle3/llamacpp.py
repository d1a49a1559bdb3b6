"""llama.cpp on the same prompts: the CPU engine a user would run instead of this project.

When a llama.cpp build is on PATH (`llama-completion` and `llama-speculative-simple`; never
a requirement), `eagle3.bench` decodes each of its prompts with it too, right after this
project's decoders: llama.cpp's plain decoding, its EAGLE-3 with this project's head (a
chain of drafts: llama.cpp verifies no trees), and its n-gram drafter. Each run is one
process on the target's GGUF file, greedy, on as many threads as torch uses; its time is
llama.cpp's own clock around prompt processing and decoding, so the model load is left out
(as the bench leaves out this project's). Greedy only: llama.cpp's sampler is not this
project's, so sampled outputs could not be compared.

The two engines' outputs are not compared token for token: llama.cpp multiplies the
quantised weights directly (with 8-bit activations), this project dequantises them, so
their greedy texts part after a while. What is checked is llama.cpp against itself: each of
its speculative decoders' text against its own plain decoding's, as far as both go (its
speculative loop stops after the round that passes the token budget, a few tokens late).
Speedups are ratios of tokens per second, since the counts differ by those few tokens.

A head reaches llama.cpp through llama.cpp's own converter (`convert_hf_to_gguf.py` in its
source tree; it needs `pip install sentencepiece`), which reads the target's config and
tokenizer from a model directory: this command hands it the dequantised GGUF target's.

    python -m eagle3.llamacpp --converter llama.cpp/convert_hf_to_gguf.py \\
        --head checkpoints/scaling/10k/head --out runs/head.gguf
    python -m eagle3.bench --llama-cpp-head runs/head.gguf
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from eagle3.checkpoint import ROOT
from eagle3.gguf import dequantized, find_gguf
from eagle3.head import EAGLE31_NORMS
from eagle3.stats import tokens_per_round, tokens_per_second
from eagle3.target import cpu_info

# The newest plain EAGLE-3 head: the shipped head is EAGLE 3.1, whose norms llama.cpp's
# converter has no place for.
EAGLE3_HEAD = os.path.join(ROOT, "checkpoints", "scaling", "10k", "head")

END_OF_TEXT = " [end of text]"  # what llama-completion prints when the model ends its reply
PLAIN_BINARY = "llama-completion"
SPECULATIVE_BINARY = "llama-speculative-simple"
RUN_TIMEOUT_S = 900


@dataclass(frozen=True)
class LlamaCppDecoder:
    """One way llama.cpp decodes: which program, with which flags."""

    name: str  # its row in the bench's report
    binary: str
    flags: tuple[str, ...] = ()

    @property
    def speculative(self) -> bool:
        return self.binary == SPECULATIVE_BINARY


@dataclass
class LlamaCppRun:
    """What one llama.cpp run reported."""

    prompt_tokens: int  # as llama.cpp tokenised the prompt's text
    new_tokens: int
    seconds: float  # prompt processing + decoding, llama.cpp's clock
    drafted: int = 0
    accepted: int = 0
    text: str = ""

    def agrees_with(self, other: LlamaCppRun) -> bool:
        """The same text as far as both go."""
        return self.text.startswith(other.text) or other.text.startswith(self.text)

    @property
    def tau(self) -> float:
        """Tokens per verification round: each round yields its accepted drafts and one token of the target's."""
        return tokens_per_round(self.accepted, self.new_tokens - self.accepted)


def last_line(log: str) -> str:
    """What a failing program said last, for its error message."""
    return (log.strip().splitlines() or ["(no output)"])[-1]


def _number(pattern: str, log: str, what: str) -> float:
    found = re.findall(pattern, log)
    if not found:
        raise ValueError(f"llama.cpp: its log does not say {what} (no match for {pattern!r}); is this build too old?")
    return float(found[-1])


def parse_plain(stdout: str, stderr: str) -> LlamaCppRun:
    """`llama-completion --no-display-prompt`: the reply on stdout, `common_perf_print` timings on stderr.
    Its first new token comes from the prompt's evaluation, each further one from an eval run."""
    prompt_ms = _number(r"prompt eval time =\s*([\d.]+) ms", stderr, "the prompt's time")
    prompt_tokens = int(_number(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens", stderr, "the prompt's tokens"))
    eval_ms = _number(r"\beval time =\s*([\d.]+) ms /\s*\d+ runs", stderr, "the decoding time")
    runs = int(_number(r"\beval time =\s*[\d.]+ ms /\s*(\d+) runs", stderr, "the decoding runs"))
    sampling_ms = _number(r"sampling time =\s*([\d.]+) ms", stderr, "the sampling time")
    text = stdout.strip("\n").removesuffix(END_OF_TEXT)
    return LlamaCppRun(prompt_tokens, runs + 1, (prompt_ms + eval_ms + sampling_ms) / 1000, text=text)


def parse_speculative(stdout: str, stderr: str, prompt_text: str) -> LlamaCppRun:
    """`llama-speculative-simple`: the prompt and the reply on stdout, its summary on stderr."""
    prompt_tokens = int(_number(r"encoded\s+(\d+) tokens", stderr, "the prompt's tokens"))
    encode_s = _number(r"encoded\s+\d+ tokens in\s+([\d.]+) seconds", stderr, "the prompt's time")
    new_tokens = int(_number(r"decoded\s+(\d+) tokens", stderr, "the new tokens"))
    decode_s = _number(r"decoded\s+\d+ tokens in\s+([\d.]+) seconds", stderr, "the decoding time")
    drafted = int(_number(r"n_drafted\s*=\s*(\d+)", stderr, "the drafted tokens"))
    accepted = int(_number(r"n_accept\s*=\s*(\d+)", stderr, "the accepted drafts"))
    text = stdout.strip("\n")
    text = text[len(prompt_text):] if text.startswith(prompt_text) else text
    return LlamaCppRun(prompt_tokens, new_tokens, encode_s + decode_s, drafted, accepted, text.strip("\n"))


def repack_flags() -> tuple[str, ...]:
    """What this CPU needs: on AMX, weight repacking off, since llama.cpp's AMX kernels crash
    or miscompute on Q4 weights there (llama.cpp issues 20824 and 16315)."""
    return ("--no-repack",) if "amx" in cpu_info() else ()


@dataclass
class LlamaCpp:
    """A llama.cpp build and what it decodes: the target's GGUF file and, optionally, a head converted to GGUF."""

    model: str
    head: str | None = None
    threads: int = 2
    chain: int = 4  # drafts per EAGLE-3 round
    ngram: tuple[int, int] = (3, 10)  # n-gram drafter: the ending looked up, the longest copy
    errors: dict[str, str] = field(default_factory=dict)  # decoder name: why it stopped

    def decoders(self) -> list[LlamaCppDecoder]:
        n, m = self.ngram
        found = [LlamaCppDecoder("llama_cpp_plain", PLAIN_BINARY, ("-no-cnv", "--no-display-prompt")),
                 LlamaCppDecoder("llama_cpp_ngram", SPECULATIVE_BINARY, (
                     "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", str(n),
                     "--spec-ngram-simple-size-m", str(m)))]
        if self.head:
            found.insert(1, LlamaCppDecoder("llama_cpp_eagle3", SPECULATIVE_BINARY, (
                "--spec-type", "draft-eagle3", "-md", self.head, "--spec-draft-n-max", str(self.chain))))
        return [d for d in found if shutil.which(d.binary)]

    def command(self, decoder: LlamaCppDecoder, prompt_file: str, max_new_tokens: int) -> list[str]:
        # llama-speculative-simple stops after the round that takes it past -n: one fewer gives at least as many
        budget = max_new_tokens - 1 if decoder.speculative else max_new_tokens
        return [shutil.which(decoder.binary), "-m", self.model, "-f", prompt_file, "-n", str(budget), "--temp", "0",
                "-t", str(self.threads), "-c", "4096", *repack_flags(), *decoder.flags]

    def decode(self, decoder: LlamaCppDecoder, prompt_file: str, prompt_text: str, max_new_tokens: int) -> LlamaCppRun:
        """One run on the prompt that `prompt_file` holds (its text is `prompt_text`)."""
        try:
            done = subprocess.run(self.command(decoder, prompt_file, max_new_tokens), capture_output=True, text=True,
                                  errors="replace", timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ValueError(f"llama.cpp: {decoder.binary} ran past {RUN_TIMEOUT_S} s") from None
        if done.returncode != 0:
            raise ValueError(f"llama.cpp: {decoder.binary} exited with {done.returncode}: {last_line(done.stderr)}")
        if decoder.speculative:
            return parse_speculative(done.stdout, done.stderr, prompt_text)
        return parse_plain(done.stdout, done.stderr)

    def decode_all(self, prompt_text: str, max_new_tokens: int, repeats: int = 1) -> dict[str, tuple[LlamaCppRun, float]]:
        """Every decoder in turn, the whole round `repeats` times: each one's first run and its median seconds.
        A decoder that fails is named in `errors` with the reason and left out from then on; the others go on."""
        runs: dict[str, list[LlamaCppRun]] = {}
        with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as f:
            f.write(prompt_text)  # one file for all the prompt's runs
        try:
            for _ in range(repeats):
                for decoder in self.decoders():
                    if decoder.name in self.errors:
                        continue
                    try:
                        runs.setdefault(decoder.name, []).append(
                            self.decode(decoder, f.name, prompt_text, max_new_tokens))
                    except ValueError as error:
                        self.errors[decoder.name] = str(error)
                        runs.pop(decoder.name, None)
        finally:
            os.unlink(f.name)
        return {name: (r[0], statistics.median(x.seconds for x in r)) for name, r in runs.items()}


def find_llama_cpp(target: str, head: str | None, threads: int, chain: int,
                   ngram: tuple[int, int]) -> tuple[LlamaCpp | None, str]:
    """The llama.cpp runner for a target, or None; and a note on what is left out ("" when nothing is)."""
    if head is not None and not os.path.isfile(head):
        raise FileNotFoundError(f"--llama-cpp-head: {head} is not a file (convert a head with "
                                "python -m eagle3.llamacpp; see its --help)")
    model = find_gguf(target) if target and os.path.exists(target) else None
    if shutil.which(PLAIN_BINARY) is None and shutil.which(SPECULATIVE_BINARY) is None:
        return None, f"llama.cpp: no {PLAIN_BINARY} or {SPECULATIVE_BINARY} on PATH; its rows are left out"
    if model is None:
        return None, f"llama.cpp: the target {target} is not a GGUF file, which llama.cpp reads; its rows are left out"
    note = "" if head else "llama.cpp: no --llama-cpp-head, so its EAGLE-3 row is left out (see eagle3/llamacpp.py)"
    return LlamaCpp(model, head, threads, chain, ngram), note


def summarise(rows: list[dict], plain_tokens_per_s: float) -> dict:
    """Per llama.cpp decoder over the prompts: tokens/s, its ratio to llama.cpp's plain decoding's and
    to this project's (plain_tokens_per_s), tau and the prompts whose text left llama.cpp's own plain
    decoding's. The ratios are over the prompts every decoder ran."""
    names = {name for row in rows for name in row["llama_cpp"]}
    table = {}
    for name in sorted(names):
        chosen = [row["llama_cpp"][name] for row in rows if name in row["llama_cpp"]]
        seconds = sum(r["seconds"] for r in chosen)
        tokens = sum(r["new_tokens"] for r in chosen)
        rate = tokens_per_second(tokens, seconds)
        entry = {"prompts": len(chosen), "tokens_per_s": round(rate, 2), "seconds": round(seconds, 3)}
        if len(chosen) == len(rows) and rate:
            entry["speedup_over_project_plain"] = round(rate / plain_tokens_per_s, 4)
        if name != "llama_cpp_plain":
            accepted = sum(r["accepted"] for r in chosen)
            entry["tau"] = round(tokens_per_round(accepted, tokens - accepted), 4) if tokens > accepted else None
            entry["drafted"], entry["accepted"] = sum(r["drafted"] for r in chosen), accepted
            entry["text_differs_from_its_plain"] = sum(r.get("matches_plain") is False for r in chosen)
        table[name] = entry
    plain = table.get("llama_cpp_plain")
    for name, entry in table.items():
        if plain and name != "llama_cpp_plain" and entry["prompts"] == plain["prompts"] and plain["tokens_per_s"]:
            entry["speedup_over_its_plain"] = round(entry["tokens_per_s"] / plain["tokens_per_s"], 4)
    return table


def export_head(converter: str, head: str, target: str, out: str, outtype: str = "bf16") -> None:
    """Run llama.cpp's converter on a head, with the dequantised GGUF target as its target model directory."""
    if not os.path.isfile(converter):
        raise FileNotFoundError(f"--converter: {converter} is not a file (it is convert_hf_to_gguf.py in llama.cpp's "
                                "source tree)")
    config = os.path.join(head, "config.json")
    if not os.path.isfile(config):
        raise FileNotFoundError(f"--head: {head} holds no config.json")
    with open(config, encoding="utf-8") as f:
        raw = json.load(f)
    eagle31 = [flag for flag in EAGLE31_NORMS if raw.get(flag)]
    if eagle31:
        # Its converter maps the EAGLE-3 tensors by name and has no place for these norms
        # (its norm_before_fc is one norm over the fused features, not one per feature).
        raise ValueError(f"--head: {head} is an EAGLE 3.1 head ({', '.join(eagle31)}), whose norms llama.cpp does "
                         f"not read; convert an EAGLE-3 head instead ({os.path.relpath(EAGLE3_HEAD, ROOT)} is one)")
    gguf = find_gguf(target)
    if gguf is None:
        raise ValueError(f"--target: {target} is not a GGUF target")
    done = subprocess.run([sys.executable, converter, head, "--target-model-dir", dequantized(gguf),
                           "--outtype", outtype, "--outfile", out], capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        raise ValueError(f"llama.cpp's converter failed: {last_line(done.stderr)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eagle3.llamacpp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--converter", required=True, help="llama.cpp's convert_hf_to_gguf.py")
    parser.add_argument("--head", default=EAGLE3_HEAD,
                        help="the EAGLE-3 head to convert (default: the 10k head; the shipped head is EAGLE 3.1, "
                             "which llama.cpp does not read)")
    parser.add_argument("--target", default=os.path.join(ROOT, "checkpoints", "smollm2"), help="its GGUF target")
    parser.add_argument("--out", required=True, help="the head's GGUF file")
    parser.add_argument("--outtype", default="bf16", help="the converter's --outtype (bf16, f16, f32, q8_0)")
    args = parser.parse_args(argv)
    try:
        export_head(args.converter, args.head, args.target, args.out, args.outtype)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
