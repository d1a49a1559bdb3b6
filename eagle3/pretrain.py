"""Train the embedded target from scratch: a small Llama on the Python standard library.

The corpus is the standard library's own source (code, docstrings, comments) of the
interpreter that runs this script, so every machine has it, nothing is downloaded, and it
is PSF-licensed. A byte-level BPE tokenizer is trained on it first. Files whose path hash
falls in the held-out slice are never trained on; their loss is reported.

    python -m eagle3.pretrain --out checkpoints/target --work runs/pretrain
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import sysconfig
import time

import numpy as np
import torch
import transformers
from tqdm import tqdm

from eagle3.target import bf16_supported, resolve_device
from eagle3.training import CsvLog, adamw, autocast, cosine_lr, load_state, save_state, set_lr

EOS = "<|endoftext|>"
HELD_OUT_EVERY = 50  # one file in 50 (by path hash) is held out


def corpus_files() -> tuple[str, list[str]]:
    """The standard library's .py files, sorted; site-packages and caches excluded."""
    root = sysconfig.get_paths()["stdlib"]
    files = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in ("site-packages", "__pycache__"))
        files += [os.path.relpath(os.path.join(directory, n), root) for n in sorted(names) if n.endswith(".py")]
    return root, sorted(files)


def is_held_out(relative_path: str) -> bool:
    return int(hashlib.sha1(relative_path.encode()).hexdigest(), 16) % HELD_OUT_EVERY == 0


def read_corpus() -> tuple[list[str], list[str], dict]:
    """(training texts, held-out texts, fingerprint)."""
    root, files = corpus_files()
    train, held_out, digest, total = [], [], hashlib.sha256(), 0
    for relative in files:
        with open(os.path.join(root, relative), "rb") as f:
            data = f.read()
        digest.update(relative.encode() + b"\0" + data)
        total += len(data)
        text = data.decode("utf-8", errors="replace")
        (held_out if is_held_out(relative) else train).append(text)
    fingerprint = {
        "python": sys.version.split()[0], "files": len(files), "bytes": total, "sha256": digest.hexdigest(),
        "held_out_files": len(held_out), "held_out_rule": f"sha1(relative path) % {HELD_OUT_EVERY} == 0",
    }
    return train, held_out, fingerprint


def train_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE tokenizer (the `tokenizers` package) wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS, bos_token=EOS, model_max_length=1 << 30)


def tokenize(tokenizer, texts: list[str]) -> np.ndarray:
    """All texts as one uint16 stream, each followed by EOS."""
    eos = tokenizer.eos_token_id
    ids = tokenizer(texts, add_special_tokens=False).input_ids
    return np.fromiter((t for doc in ids for t in (*doc, eos)), dtype=np.uint16)


def make_model(args, tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.context, rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)


def batch(stream: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator) -> torch.Tensor:
    """Random windows of seq_len + 1 tokens: [batch_size, seq_len + 1]."""
    starts = torch.randint(0, len(stream) - seq_len - 1, (batch_size,), generator=generator)
    return torch.stack([stream[s : s + seq_len + 1] for s in starts.tolist()]).long()


@torch.no_grad()
def held_out_loss(model, stream: torch.Tensor, seq_len: int, device, use_bf16: bool, max_windows: int = 64) -> float:
    """Mean next-token loss over consecutive windows of the held-out slice."""
    model.eval()
    windows = stream[: (len(stream) - 1) // seq_len * seq_len + 1]
    losses = []
    for start in range(0, min(len(windows) - 1, max_windows * seq_len), seq_len):
        chunk = windows[start : start + seq_len + 1].long().to(device)[None]
        with autocast(device, use_bf16):
            losses.append(_loss(model, chunk).item())
    model.train()
    return float(np.mean(losses))


def _loss(model, chunk: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy of chunk [B, T + 1]."""
    logits = model(chunk[:, :-1]).logits.float()
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten())


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagle3.pretrain", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="checkpoints/target", help="where the finished model directory goes")
    parser.add_argument("--work", default="runs/pretrain", help="tokenized corpus, resumable state, CSV log")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--intermediate", type=int, default=1024)
    parser.add_argument("--context", type=int, default=1024, help="max_position_embeddings")
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=2400)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--save-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--no-bf16", action="store_true", help="train in float32 even where bfloat16 is available")
    parser.add_argument("--save-dtype", default="bfloat16", choices=["bfloat16", "float32"],
                        help="dtype of the saved weights (bfloat16 halves the size; loading upcasts on CPU)")
    return parser.parse_args(argv)


def prepare(args):
    """Tokenizer and token streams, built once and cached in the work folder."""
    from transformers import AutoTokenizer

    tokenizer_dir = os.path.join(args.work, "tokenizer")
    streams = os.path.join(args.work, "train.npy"), os.path.join(args.work, "held_out.npy")
    fingerprint_path = os.path.join(args.work, "corpus.json")
    if all(os.path.exists(p) for p in (*streams, fingerprint_path, tokenizer_dir)):
        with open(fingerprint_path, encoding="utf-8") as f:
            fingerprint = json.load(f)
        return AutoTokenizer.from_pretrained(tokenizer_dir), *(np.load(p) for p in streams), fingerprint
    train_texts, held_out_texts, fingerprint = read_corpus()
    print(f"corpus: {fingerprint['files']} files, {fingerprint['bytes'] / 1e6:.1f} MB, Python {fingerprint['python']}")
    tokenizer = train_tokenizer(train_texts, args.vocab_size)
    tokenizer.save_pretrained(tokenizer_dir)
    train, held_out = tokenize(tokenizer, train_texts), tokenize(tokenizer, held_out_texts)
    fingerprint.update(train_tokens=len(train), held_out_tokens=len(held_out))
    for path, stream in zip(streams, (train, held_out)):
        np.save(path, stream)
    with open(fingerprint_path, "w", encoding="utf-8") as f:
        json.dump(fingerprint, f, indent=2)
    return tokenizer, train, held_out, fingerprint


def main(argv=None) -> int:
    args = parse_args(argv)
    transformers.set_seed(args.seed)
    device = resolve_device(args.device)
    use_bf16 = bf16_supported(device) and not args.no_bf16
    os.makedirs(args.work, exist_ok=True)
    tokenizer, train, held_out, fingerprint = prepare(args)
    train, held_out = torch.from_numpy(train.astype(np.int32)), torch.from_numpy(held_out.astype(np.int32))
    print(f"tokens: {len(train):,} train, {len(held_out):,} held out; bf16 autocast: {use_bf16}")

    model = make_model(args, tokenizer).to(device)
    optimizer = adamw(model.parameters(), args.lr, weight_decay=0.1)
    generator = torch.Generator().manual_seed(args.seed)
    state_path, step = os.path.join(args.work, "state.pt"), 0
    if os.path.exists(state_path):
        state = load_state(state_path, model, optimizer)
        if state["recipe"] != recipe(args):
            raise ValueError(f"resume: {state_path} was made with another recipe; use another --work folder")
        step = state["step"]
        generator.set_state(state["data_rng"])
        print(f"resumed at step {step}")
    log = CsvLog(os.path.join(args.work, "log.csv"), ["step", "tokens", "loss", "held_out_loss", "lr", "seconds"])

    model.train()
    started = time.perf_counter()
    bar = tqdm(range(step, args.steps), initial=step, total=args.steps, desc="pretrain", dynamic_ncols=True)
    for step in bar:
        lr = cosine_lr(step, args.steps, args.warmup, args.lr)
        set_lr(optimizer, lr)
        chunk = batch(train, args.batch_size, args.seq_len, generator).to(device)
        with autocast(device, use_bf16):
            loss = _loss(model, chunk)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr:.2e}")
        done = step + 1
        row = dict(step=done, tokens=done * args.batch_size * args.seq_len, loss=f"{loss.item():.4f}",
                   lr=f"{lr:.3e}", seconds=f"{time.perf_counter() - started:.0f}")
        if done % args.eval_every == 0 or done == args.steps:
            row["held_out_loss"] = f"{held_out_loss(model, held_out, args.seq_len, device, use_bf16):.4f}"
            bar.write(f"step {done}: held-out loss {row['held_out_loss']}")
        log.write(**row)
        if done % args.save_every == 0 or done == args.steps:
            save_state(state_path, model, optimizer, done, data_rng=generator.get_state(), recipe=recipe(args))

    final_loss = held_out_loss(model, held_out, args.seq_len, device, use_bf16, max_windows=10**9)
    save_model(model, tokenizer, args, fingerprint, final_loss)
    print(f"held-out loss {final_loss:.4f} (perplexity {np.exp(final_loss):.2f}); saved to {args.out}")
    return 0


def save_model(model, tokenizer, args, fingerprint: dict, final_loss: float) -> None:
    """A normal transformers model directory plus the corpus fingerprint and the recipe."""
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[args.save_dtype]
    model.to(dtype).save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    with open(os.path.join(args.out, "training.json"), "w", encoding="utf-8") as f:
        json.dump({"corpus": fingerprint, "recipe": recipe(args), "held_out_loss": round(final_loss, 4)}, f, indent=2)


def recipe(args) -> dict:
    """The arguments that define the model and its training (not where files go)."""
    return {k: v for k, v in vars(args).items() if k not in ("out", "work", "device", "eval_every", "save_every")}


if __name__ == "__main__":
    sys.exit(main())
