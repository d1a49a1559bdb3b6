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
from collections.abc import Callable

import torch
from tqdm import tqdm

from eagle3.acceptance import SamplingConfig, sample_rows
from eagle3.decoding import prefill
from eagle3.kv_cache import SlotKVCache
from eagle3.native import argmax
from eagle3.target import Target, load_target, resolve_device, training_dtype

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


def continue_prompts(target: Target, prompts: list[str], max_new_tokens: int, temperature: float,
                     batch_size: int, seed: int, add_special_tokens: bool = True) -> list[str]:
    """The target's continuation of each prompt, as text (EOS dropped). Prompts rendered with
    a chat template carry their special tokens already: add_special_tokens=False.
    Sampled continuations (temperature > 0) use top-p 0.95."""
    tokenizer = target.tokenizer
    ids = [tokenizer(p, add_special_tokens=add_special_tokens).input_ids for p in prompts]
    replies = generate_replies(target, ids, max_new_tokens, reply_sampling(temperature), batch_size, seed)
    return tokenizer.batch_decode(replies, skip_special_tokens=True)


def reply_sampling(temperature: float) -> SamplingConfig:
    """How training-data replies are drawn: greedy at 0, else at this temperature with top-p 0.95."""
    return SamplingConfig(temperature, top_p=0.95 if temperature > 0 else 1.0)


@torch.inference_mode()
def generate_replies(target: Target, prompts: list[list[int]], max_new_tokens: int, sampling: SamplingConfig,
                     slots: int, seed: int,
                     follow_up: Callable[[int, list[int]], list[int] | None] | None = None) -> list[list[int]]:
    """Each prompt's continuation as token ids, EOS excluded, in the prompts' order.

    `follow_up(i, reply)`, called as each reply ends, may return a further prompt (the next
    turn of prompt i's conversation, say): it joins the queue as prompt len(prompts) so far,
    and the result has its reply at that index too.

    Continuous batching for training data: `slots` rows decode together, one token each per
    target forward, and a row whose reply ends takes the next prompt, so that every forward
    stays nearly full however the reply lengths vary. Free slots are refilled together (one
    batched prefill, prompts of similar lengths) once they are an eighth of the batch. No
    exactness is kept between rows and one-token steps (see eagle3.decoding for that)."""
    device, eos = target.device, target.eos_token_ids
    generator = torch.Generator(device).manual_seed(seed)
    prompts = list(prompts)
    queue = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    slots = min(slots, len(prompts))
    cache = SlotKVCache(target.num_layers, slots, max(len(p) for p in prompts) + max_new_tokens, device)
    owner: list[int | None] = [None] * slots  # the prompt each slot is answering
    tokens = torch.zeros(slots, dtype=torch.long, device=device)  # each slot's next input
    replies: list[list[int]] = [[] for _ in prompts]
    bar = tqdm(total=len(prompts), desc=f"replies T={sampling.temperature:g}", unit="prompt", dynamic_ncols=True)

    def pick(logits: torch.Tensor) -> torch.Tensor:
        if sampling.greedy:
            return argmax(logits)
        return sample_rows(logits, sampling, generator)

    def take(slot: int, token: int) -> None:
        """Append a slot's new token, or free the slot when its reply is done."""
        reply = replies[owner[slot]]
        if token not in eos:
            reply.append(token)
            tokens[slot] = token
        if token in eos or len(reply) == max_new_tokens:
            further = follow_up(owner[slot], reply) if follow_up else None
            if further is not None:
                queue.append(len(prompts))
                prompts.append(further)
                replies.append([])
                cache.grow(len(further) + max_new_tokens)
                bar.total += 1
            owner[slot] = None
            cache.lengths[slot] = 0  # its junk writes land at 0 until a new prompt overwrites it
            bar.update(1)

    while queue or any(o is not None for o in owner):
        free = [s for s, o in enumerate(owner) if o is None]
        if queue and (len(free) * 8 >= slots or len(free) == slots):
            newcomers, queue = queue[: len(free)], queue[len(free) :]
            ids = [prompts[i] for i in newcomers]
            prefill_cache = target.new_cache(max(map(len, ids)))
            _, last_logits, _ = prefill(target, ids, prefill_cache)
            cache.insert(free[: len(ids)], prefill_cache, [len(p) for p in ids])
            for slot, i, token in zip(free, newcomers, pick(last_logits).tolist()):
                owner[slot] = i
                take(slot, token)
        live = torch.tensor([o is not None for o in owner], device=device)
        if not live.any():
            continue
        cache.width = int(cache.lengths.max()) + 1
        positions = cache.lengths[:, None]  # [slots, 1]
        keys = torch.arange(cache.width, device=device).expand(slots, -1)
        mask = target.attention_mask((keys <= positions)[:, None, :], positions, keys)
        logits = target.forward(tokens[:, None], positions, cache, mask).logits[:, -1]
        cache.lengths += live
        for slot, token in zip(range(slots), pick(logits).tolist()):
            if owner[slot] is not None:
                take(slot, token)
    bar.close()
    return replies


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
    device = resolve_device(args.device)
    # No exactness needed for data: ATen's own kernels, in the dtype they are fast in.
    target = load_target(args.target, device, training_dtype(None, device), attention="sdpa")
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
