"""How much of the target's greedy output a draft vocabulary of each size can draft at all:
the vocabulary is the most frequent reply tokens of the training parts (as eagle3.train
builds it), the output is plain decoding's in a bench JSON (`plain_ids` per prompt). A token
outside the draft vocabulary ends every draft chain that reaches it.

    PYTHONPATH=. python docs/probes/draft_vocab_coverage.py --bench runs/bench_chat.json runs/bench_mtbench.json
"""

import argparse
import glob
import gzip
import json

import torch
from transformers import AutoTokenizer

from eagle3.gguf import dequantized, find_gguf

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--target", default="checkpoints/smollm2")
parser.add_argument("--parts", nargs="+", default=sorted(glob.glob("assets/data/replies_first/*.jsonl.gz"))
                    + sorted(glob.glob("assets/data/replies_more/*.jsonl.gz"))[:6],
                    help="reply parts the vocabulary is counted on (default: the 10k point's 11)")
parser.add_argument("--bench", nargs="+", required=True, help="bench JSON files with plain_ids per prompt")
parser.add_argument("--sizes", type=int, nargs="+", default=[3072, 6144, 8192, 12288, 16384, 24576, 32000])
args = parser.parse_args()
gguf = find_gguf(args.target)
tokenizer = AutoTokenizer.from_pretrained(dequantized(gguf) if gguf else args.target)
counts = torch.zeros(len(tokenizer), dtype=torch.long)
for part in args.parts:
    with gzip.open(part, "rt", encoding="utf-8") as f:
        for line in f:
            replies = [m["content"] for m in json.loads(line)["conversations"] if m["role"] == "assistant"]
            counts += torch.bincount(torch.tensor(tokenizer("\n".join(replies)).input_ids), minlength=len(tokenizer))
order = counts.argsort(descending=True)
outputs = {}
for path in args.bench:
    with open(path, encoding="utf-8") as f:
        outputs[path] = torch.tensor([i for prompt in json.load(f)["prompts"] for i in prompt["plain_ids"]])
print(f"{int(counts.sum()):,} reply tokens, {int((counts > 0).sum()):,} distinct")
print("| draft vocabulary | training replies | " + " | ".join(outputs) + " |")
print("| --- | --- | " + " | ".join("---" for _ in outputs) + " |")
for size in args.sizes:
    chosen = torch.zeros(len(tokenizer), dtype=torch.bool)
    chosen[order[:size]] = True
    print(f"| {size:,} | {float(counts[chosen].sum() / counts.sum()):.1%} | "
          + " | ".join(f"{float(chosen[ids].float().mean()):.1%}" for ids in outputs.values()) + " |")
