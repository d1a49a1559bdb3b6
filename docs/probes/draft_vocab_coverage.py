"""How much of the target's greedy output a draft vocabulary of each size can draft at all:
the vocabulary is eagle3.train's own (`build_draft_vocab`: the most frequent learned tokens
of the training parts), the output is plain decoding's in a bench JSON (`plain_ids` per prompt). A token
outside the draft vocabulary ends every draft chain that reaches it. With --head, the head's own
vocabulary too, and how many of the tokens it cannot draft were already in the context (the
prompt or the output before them), where a context copy can draft them.

    PYTHONPATH=. python docs/probes/draft_vocab_coverage.py --bench runs/bench_chat.json runs/bench_mtbench.json
"""

import argparse
import glob
import json

import torch
from transformers import AutoTokenizer

from eagle3.checkpoint import read_state_dict
from eagle3.data import load_examples
from eagle3.gguf import dequantized, find_gguf
from eagle3.train import build_draft_vocab

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--target", default="checkpoints/smollm2")
parser.add_argument("--parts", nargs="+", default=sorted(glob.glob("assets/data/replies_first/*.jsonl.gz"))
                    + sorted(glob.glob("assets/data/replies_more/*.jsonl.gz"))[:6],
                    help="reply parts the vocabulary is counted on (default: the 10k point's 11)")
parser.add_argument("--bench", nargs="+", required=True, help="bench JSON files with plain_ids per prompt")
parser.add_argument("--sizes", type=int, nargs="+", default=[3072, 6144, 8192, 12288, 16384, 24576, 32000])
parser.add_argument("--max-length", type=int, default=768, help="tokens per example, as in the training")
parser.add_argument("--head", default=None, help="a head directory whose own draft vocabulary to count as well")
args = parser.parse_args()
gguf = find_gguf(args.target)
tokenizer = AutoTokenizer.from_pretrained(dequantized(gguf) if gguf else args.target)
# The examples eagle3.train learns from (the chat template applied, the loss on the replies).
examples = [example for part in args.parts for example in load_examples(part, tokenizer, args.max_length)]
learned = torch.cat([torch.tensor(e.input_ids)[torch.tensor(e.loss_mask, dtype=torch.bool)] for e in examples])
counts = torch.bincount(learned, minlength=len(tokenizer))
outputs, in_context = {}, {}
for path in args.bench:
    with open(path, encoding="utf-8") as f:
        prompts = json.load(f)["prompts"]
    outputs[path] = torch.tensor([i for prompt in prompts for i in prompt["plain_ids"]])
    in_context[path] = torch.tensor([t in prompt["prompt_ids"] + prompt["plain_ids"][:n] for prompt in prompts
                                     for n, t in enumerate(prompt["plain_ids"])])
if args.head:
    t2d = read_state_dict(args.head)["t2d"].bool()
    for path, ids in outputs.items():
        missing = ~t2d[ids]
        print(f"{args.head} ({int(t2d.sum()):,} tokens) on {path}: {float(1 - missing.float().mean()):.1%} of the "
              f"output; of the {int(missing.sum())} tokens it cannot draft, {int(in_context[path][missing].sum())} "
              "were in the context already")
print(f"{int(counts.sum()):,} learned tokens, {int((counts > 0).sum()):,} distinct")
print("| draft vocabulary | learned tokens | " + " | ".join(outputs) + " |")
print("| --- | --- | " + " | ".join("---" for _ in outputs) + " |")
for size in args.sizes:
    _, chosen = build_draft_vocab(examples, len(tokenizer), size)  # t2d: the chosen tokens
    print(f"| {size:,} | {float(counts[chosen].sum() / counts.sum()):.1%} | "
          + " | ".join(f"{float(chosen[ids].float().mean()):.1%}" for ids in outputs.values()) + " |")
