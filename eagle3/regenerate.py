"""Make head-training data with the target's own words (as the EAGLE reference does).

    python -m eagle3.regenerate --target checkpoints/target --out runs/selfgen.jsonl --samples 3000

Prompts come from a JSONL file ({"prompt": ...} or {"turns": [...]}) or, by default, from
the Python standard library's training split (a few lines of context, then a `def` or
`class` line and its docstring). The target continues each prompt, greedily or sampled
in turn, and each line written is {"text": prompt + continuation}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys

import torch
from tqdm import tqdm

from eagle3.target import Target, load_target

DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+\w+")


def stdlib_prompts(count: int, seed: int, context_lines: int = 4, max_chars: int = 600) -> list[str]:
    """Definitions (with a little context and their docstring) from the training split."""
    from eagle3.pretrain import corpus_files, is_held_out

    root, files = corpus_files()
    candidates = []
    for relative in files:
        if is_held_out(relative):
            continue
        with open(os.path.join(root, relative), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines(keepends=True)
        candidates += [(lines, i) for i, line in enumerate(lines) if DEFINITION.match(line)]
    # Half of the prompts are definitions with a docstring (what users ask for), half any.
    documented = [(lines, i) for lines, i in candidates if _has_docstring(lines, i)]
    rng = random.Random(seed)
    chosen = rng.sample(documented, count // 2) + rng.sample(candidates, count - count // 2)
    rng.shuffle(chosen)
    return [_definition_prompt(lines, i, context_lines)[-max_chars:] for lines, i in chosen]


def _has_docstring(lines: list[str], index: int) -> bool:
    after = lines[index + 1].lstrip() if index + 1 < len(lines) else ""
    return lines[index].rstrip().endswith(":") and after.startswith(('"""', "'''", 'r"""'))


def _definition_prompt(lines: list[str], index: int, context_lines: int) -> str:
    """Context lines, the definition line(s) up to the colon, and a docstring if one follows."""
    end = index
    while end < len(lines) - 1 and not lines[end].rstrip().endswith(":"):
        end += 1  # a signature spread over several lines
    end += 1
    if end < len(lines) and lines[end].lstrip().startswith(('"""', "'''", 'r"""')):
        quote = lines[end].lstrip().lstrip("r")[:3]
        closed = lines[end].count(quote) >= 2
        end += 1
        while not closed and end < len(lines):
            closed = quote in lines[end]
            end += 1
    return "".join(lines[max(0, index - context_lines) : end])


@torch.inference_mode()
def continue_prompts(target: Target, prompts: list[str], max_new_tokens: int, temperature: float,
                     batch_size: int, seed: int, add_special_tokens: bool = True) -> list[str]:
    """The target's continuation of each prompt (batched, left-padded). Prompts rendered with
    a chat template carry their special tokens already: add_special_tokens=False."""
    tokenizer = target.tokenizer
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    torch.manual_seed(seed)
    outputs = []
    for start in tqdm(range(0, len(prompts), batch_size), desc=f"generate T={temperature}", dynamic_ncols=True):
        batch = tokenizer(prompts[start : start + batch_size], return_tensors="pt", padding=True,
                          add_special_tokens=add_special_tokens).to(target.device)
        sampling = dict(do_sample=True, temperature=temperature, top_p=0.95) if temperature > 0 else dict(do_sample=False)
        generated = target.model.generate(**batch, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                                          **sampling)
        outputs += tokenizer.batch_decode(generated[:, batch.input_ids.shape[1]:], skip_special_tokens=True)
    return outputs


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagle3.regenerate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True)
    parser.add_argument("--out", required=True, help="JSONL to write")
    parser.add_argument("--prompts", default=None, help="JSONL of prompts (default: the standard library)")
    parser.add_argument("--samples", type=int, default=2000, help="prompts to use from the standard library")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--temperatures", default="0,0.8", help="comma-separated; prompts take them in turn")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    target = load_target(args.target, args.device)
    if args.prompts:
        from eagle3.prompts import read_prompts

        prompts = [r.first for r in read_prompts(args.prompts)]
    else:
        prompts = stdlib_prompts(args.samples, args.seed)
    temperatures = [float(t) for t in args.temperatures.split(",")]
    texts = [""] * len(prompts)
    for k, temperature in enumerate(temperatures):
        indices = list(range(k, len(prompts), len(temperatures)))
        continuations = continue_prompts(target, [prompts[i] for i in indices], args.max_new_tokens, temperature,
                                         args.batch_size, args.seed + k)
        for i, continuation in zip(indices, continuations):
            texts[i] = prompts[i] + continuation
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps({"text": text}) + "\n")
    print(f"wrote {len(texts)} records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
