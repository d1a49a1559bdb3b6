"""Target features for head training, computed once and stored as sharded safetensors.

    python -m eagle3.features --target DIR --data chats.jsonl --out runs/features [--regenerate]
    python -m eagle3.train --target DIR --features runs/features --out HEAD_DIR

Each shard holds a range of examples, concatenated along the token axis:
    input_ids [N] int64, loss_mask [N] int8, offsets [n + 1] int64,
    features  [N, 3H]  the fused low / mid / high states the head reads,
    hidden    [N, H]   the target's final (normed) states; training turns them into the
                       target's logits over the draft vocabulary with those rows of its lm_head,
    target_token [N] int64  the target's greedy token (argmax over its whole vocabulary), and
    logsumexp [N] float32   its full-vocabulary log-normaliser: with them, training never
                       computes the full [N, V] logits (the teacher's draft-vocabulary
                       probabilities are exp(logit - logsumexp), exactly).
`index.json` names the target, its aux layers, the data and the shards. A shard is written
under a temporary name and renamed when complete, and a rerun skips complete shards, so an
interrupted run resumes where it stopped. `--regenerate` first replaces every assistant
turn with the target's own reply (as the EAGLE reference trains), written to
OUT/regenerated.jsonl.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from dataclasses import dataclass
from functools import lru_cache

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from tqdm import tqdm

from eagle3.data import Example, conversation_messages, load_examples, pad_batch, read_jsonl
from eagle3.regenerate import generate_replies, reply_sampling
from eagle3.target import DTYPES, Target, load_target, resolve_device, training_dtype
from eagle3.training import written_whole

INDEX = "index.json"
FORMAT = 2  # 2: with target_token and logsumexp
STATES = ("features", "hidden", "target_token", "logsumexp")


@dataclass
class ExampleStates:
    """What the target computed at the n positions of one example."""

    features: torch.Tensor  # [n, 3H] fused low / mid / high states
    hidden: torch.Tensor  # [n, H] final normed states
    target_token: torch.Tensor  # [n] the target's greedy token
    logsumexp: torch.Tensor  # [n] log-sum-exp of its full-vocabulary logits


def target_signature(target: Target) -> dict:
    """What must match between the target that wrote the features and the one that trains on them."""
    return {"hidden_size": target.hidden_size, "num_layers": target.num_layers, "vocab_size": target.vocab_size,
            "aux_layer_ids": list(target.aux_layer_ids)}


@torch.inference_mode()
def write_features(target: Target, examples: list[Example], out: str, shard_size: int = 256, batch_size: int = 8,
                   dtype: torch.dtype | None = None, source: str = "") -> dict:
    """Compute and store the features of every example; skip shards already complete."""
    os.makedirs(out, exist_ok=True)
    shards = [(start, min(start + shard_size, len(examples))) for start in range(0, len(examples), shard_size)]
    index = {"format": FORMAT, "target": target_signature(target), "source": source, "examples": len(examples),
             "shards": [{"file": f"shard-{i:05d}.safetensors", "start": a, "end": b} for i, (a, b) in enumerate(shards)]}
    previous = os.path.join(out, INDEX)
    if os.path.exists(previous):
        with open(previous, encoding="utf-8") as f:
            if json.load(f) != index:
                raise ValueError(f"features: {out} holds features of other data or another target; use a new --out")
    with open(previous, "w", encoding="utf-8") as f:
        json.dump(index, f, indent=1)
    todo = [s for s in index["shards"] if not os.path.exists(os.path.join(out, s["file"]))]
    print(f"{len(examples)} examples in {len(shards)} shards; {len(shards) - len(todo)} already written")
    for shard in tqdm(todo, desc="features", dynamic_ncols=True):
        chunk = examples[shard["start"] : shard["end"]]
        features, hidden, tokens, normalizers = [], [], [], []
        for start in range(0, len(chunk), batch_size):
            ids, _, attention = pad_batch(chunk[start : start + batch_size])
            f, h = target.training_states(ids.to(target.device), attention.to(target.device))
            for row, n in enumerate(attention.sum(1).tolist()):
                features.append(f[row, :n].to(dtype or f.dtype).cpu())
                hidden.append(h[row, :n].to(dtype or h.dtype).cpu())
                token, normalizer = target.teacher_stats(h[row, :n])
                tokens.append(token.cpu())
                normalizers.append(normalizer.cpu())
        lengths = [len(e.input_ids) for e in chunk]
        tensors = {
            "input_ids": torch.tensor([t for e in chunk for t in e.input_ids], dtype=torch.long),
            "loss_mask": torch.tensor([m for e in chunk for m in e.loss_mask], dtype=torch.int8),
            "offsets": torch.tensor([0] + lengths).cumsum(0),
            "features": torch.cat(features),
            "hidden": torch.cat(hidden),
            "target_token": torch.cat(tokens),
            "logsumexp": torch.cat(normalizers),
        }
        with written_whole(os.path.join(out, shard["file"])) as temporary:
            save_file(tensors, temporary)
    return index


class FeatureStore:
    """Read access to one or more directories written by `write_features`, one example at a time.

    Several directories read as one dataset, in the order given: the examples of the first,
    then those of the second, and so on (e.g. a first run and the data added later).
    """

    def __init__(self, directories: str | list[str], target: Target | None = None):
        directories = [directories] if isinstance(directories, str) else list(directories)
        self.shards: list[dict] = []  # {"path", "start", "end"} with start / end over all directories
        signature = None  # the first directory's target; every other must match it
        for directory in directories:
            path = os.path.join(directory, INDEX)
            if not os.path.exists(path):
                raise FileNotFoundError(f"features: no {INDEX} in {directory}; write it with python -m eagle3.features")
            with open(path, encoding="utf-8") as f:
                index = json.load(f)
            if index.get("format") != FORMAT:
                raise ValueError(f"features: {directory} was written by an older eagle3.features (without the "
                                 "target's greedy tokens and log-normalisers); write them again into a new folder")
            missing = [s["file"] for s in index["shards"] if not os.path.exists(os.path.join(directory, s["file"]))]
            if missing:
                raise FileNotFoundError(f"features: {len(missing)} shards missing in {directory} (first {missing[0]}); "
                                        "rerun python -m eagle3.features to complete them")
            if signature is not None and index["target"] != signature:
                raise ValueError(f"features: {directory} was written by another target than {directories[0]}")
            offset = self.shards[-1]["end"] if self.shards else 0
            self.shards += [{"path": os.path.join(directory, s["file"]), "start": offset + s["start"],
                             "end": offset + s["end"]} for s in index["shards"]]
            signature = signature or index["target"]
        if target is not None and signature != target_signature(target):
            raise ValueError(f"features: written by a target with {signature}, "
                             f"but this target has {target_signature(target)}")
        self._shard = lru_cache(maxsize=4)(self._open)

    def __len__(self) -> int:
        return self.shards[-1]["end"] if self.shards else 0

    def _open(self, number: int):
        return safe_open(self.shards[number]["path"], framework="pt")

    def _locate(self, i: int) -> tuple[object, int, int]:
        number = next(n for n, s in enumerate(self.shards) if s["start"] <= i < s["end"])
        shard = self._shard(number)
        offsets = shard.get_slice("offsets")
        local = i - self.shards[number]["start"]
        start, end = (int(v) for v in offsets[local : local + 2])
        return shard, start, end

    def example(self, i: int) -> Example:
        shard, start, end = self._locate(i)
        return Example(shard.get_slice("input_ids")[start:end].tolist(), shard.get_slice("loss_mask")[start:end].tolist())

    def states(self, i: int) -> ExampleStates:
        """The target's stored states at the n positions of example i."""
        shard, start, end = self._locate(i)
        return ExampleStates(*(shard.get_slice(name)[start:end] for name in STATES))


def regenerate_conversations(target: Target, records: list[dict], max_new_tokens: int, temperature: float,
                             batch_size: int, seed: int) -> list[dict]:
    """Each assistant turn replaced by the target's reply to the conversation before it
    (earlier turns already regenerated). Needs a tokenizer with a chat template. All turns
    of all records are decoded in one continuous batch: as a reply ends, the prompt of its
    conversation's next assistant turn joins the queue."""
    tokenizer = target.tokenizer
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("regenerate: the target's tokenizer has no chat template to render the conversations")
    conversations = [conversation_messages(r) for r in records]

    def ask(index: int, after: int) -> list[int] | None:
        """Queue the prompt of conversation `index`'s first assistant turn after `after`."""
        conversation = conversations[index]
        turn = next((t for t in range(after + 1, len(conversation)) if conversation[t]["role"] == "assistant"), None)
        if turn is None:
            return None
        asked.append((index, turn))
        text = tokenizer.apply_chat_template(conversation[:turn], tokenize=False, add_generation_prompt=True)
        return tokenizer(text, add_special_tokens=False).input_ids

    def answered(i: int, reply: list[int]) -> list[int] | None:
        index, turn = asked[i]
        conversations[index][turn] = {"role": "assistant", "content": tokenizer.decode(reply, skip_special_tokens=True).strip()}
        return ask(index, turn)

    asked: list[tuple[int, int]] = []  # (conversation, turn) of each prompt, in generate_replies' order
    prompts = [p for p in (ask(index, -1) for index in range(len(conversations))) if p is not None]
    if prompts:
        generate_replies(target, prompts, max_new_tokens, reply_sampling(temperature), batch_size, seed, answered)
    return [{"conversations": c} for c in conversations]


def regenerate_file(target: Target, data: str, out: str, max_new_tokens: int, temperatures: list[float],
                    batch_size: int, seed: int, chunk_size: int = 128, limit: int | None = None, skip: int = 0,
                    parts: str | None = None) -> str:
    """OUT/regenerated.jsonl: the records of `data` with the target's own replies.

    Chunk c of chunk_size records is answered at temperatures[c % len(temperatures)] (so
    "0,0,0.7" makes two thirds greedy and one third sampled replies) and written to
    PARTS/part-c.jsonl.gz (PARTS: OUT/regenerated unless given, e.g. a folder that is
    committed as the run goes) once done; a rerun skips the parts already written, also
    with another `limit` (the first records only) or other temperatures for the parts still
    to make. `skip` (a multiple of chunk_size) leaves out the first records, to extend a
    run with new data only; chunks keep their numbers in the whole file. regenerated.jsonl
    is the parts of this call, joined."""
    if skip % chunk_size:
        raise ValueError(f"skip: {skip} is not a multiple of the chunk size {chunk_size}")
    final = os.path.join(out, "regenerated.jsonl")
    records = read_jsonl(data)[:limit]
    parts = parts or os.path.join(out, "regenerated")
    os.makedirs(parts, exist_ok=True)
    chunks = range(skip, len(records), chunk_size)
    names = [os.path.join(parts, f"part-{start // chunk_size:05d}.jsonl.gz") for start in chunks]
    done = sum(os.path.exists(name) for name in names)
    print(f"regenerating {max(0, len(records) - skip)} conversations in {len(names)} chunks; {done} already written")
    for start, name in zip(chunks, names):
        if os.path.exists(name):
            continue
        c = start // chunk_size
        chunk = records[start : start + chunk_size]
        answered = regenerate_conversations(target, chunk, max_new_tokens, temperatures[c % len(temperatures)],
                                            batch_size, seed + 1000 * c)
        with written_whole(name) as temporary, gzip.open(temporary, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps({**r, **a}, ensure_ascii=False) + "\n" for r, a in zip(chunk, answered))
    os.makedirs(out, exist_ok=True)
    with written_whole(final) as temporary, open(temporary, "w", encoding="utf-8") as f:
        for name in names:
            with gzip.open(name, "rt", encoding="utf-8") as part:
                f.write(part.read())
    return final


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagle3.features", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True, help="target model directory (or hub id where a network exists)")
    parser.add_argument("--data", required=True, help='JSONL: {"text"}, {"conversations"} or {"messages"} per line')
    parser.add_argument("--out", required=True, help="directory for index.json and the shards")
    parser.add_argument("--max-length", type=int, default=2048, help="tokens per example")
    parser.add_argument("--shard-size", type=int, default=256, help="examples per shard")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--regenerate", action="store_true", help="replace the assistant turns with the target's replies")
    parser.add_argument("--max-new-tokens", type=int, default=512, help="per regenerated reply")
    parser.add_argument("--regenerate-only", action="store_true",
                        help="stop once the replies are written (e.g. to make them in bfloat16, then rerun for the "
                             "features in float32, as inference will read them)")
    parser.add_argument("--limit", type=int, default=None, help="regenerate only the first N records of --data "
                                                              "(a multiple of 128 reuses the chunks of a longer run)")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N records of --data (a multiple "
                                                            "of 128): new replies for a longer run")
    parser.add_argument("--chunk-size", type=int, default=128, help="records per reply part (a rerun resumes "
                                                                   "at the first part not written)")
    parser.add_argument("--replies", default=None, help="folder of the reply parts (default OUT/regenerated)")
    parser.add_argument("--temperatures", default="0", help="of the regenerated replies, comma-separated: chunks of "
                                                            "records take them in turn (0: greedy)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto",
                        help="the target's dtype (auto: bfloat16 where ATen's bfloat16 matmuls are fast: CUDA, AVX-512 BF16, AMX; else float32)")
    parser.add_argument("--save-dtype", default=None, choices=sorted(DTYPES), help="dtype of the stored states")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        # Training data needs no bit-exact one-token arithmetic (eagle3.invariant): the model's own kernels.
        device = resolve_device(args.device)
        target = load_target(args.target, device, training_dtype(args.dtype, device), attention="sdpa")
        data = args.data
        if args.regenerate:
            temperatures = [float(t) for t in args.temperatures.split(",")]
            data = regenerate_file(target, args.data, args.out, args.max_new_tokens, temperatures, args.batch_size,
                                   args.seed, args.chunk_size, limit=args.limit, skip=args.skip, parts=args.replies)
            if args.regenerate_only:
                print(f"wrote the replies to {data}")
                return 0
        examples = load_examples(data, target.tokenizer, args.max_length)
        write_features(target, examples, args.out, args.shard_size, args.batch_size,
                       DTYPES[args.save_dtype] if args.save_dtype else None, source=os.path.abspath(args.data))
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote the features of {len(examples)} examples to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
