"""Reply throughput of eagle3.regenerate.continue_prompts on the head-training prompts.

    python docs/pipeline/regen_speed.py --prompts 1024 --batch-size 128 [--attention sdpa]

Loads the default target in bfloat16, answers the first user turn of the first N records of
assets/data/train_prompts.jsonl (at most 192 new tokens, as the head's data runs do) and
prints one JSON line: seconds, reply tokens (EOS included) and tokens per second. The same
call exists at earlier commits, so checking one out and running this there gives the before.
"""

import argparse
import json
import sys
import time

sys.path.insert(0, ".")
from eagle3.regenerate import continue_prompts  # noqa: E402
from eagle3.target import load_target  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--prompts", type=int, default=1024)
parser.add_argument("--temperature", type=float, default=0.0)
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--attention", default="auto", help="auto: what the data CLIs load at this commit")
args = parser.parse_args()
target = load_target("checkpoints/smollm2", "cpu", "bfloat16", attention=args.attention)
with open("assets/data/train_prompts.jsonl", encoding="utf-8") as f:
    records = [json.loads(line) for line in f][: args.prompts]
prompts = [target.tokenizer.apply_chat_template([{"role": "user", "content": r["conversations"][0]["value"]}],
                                                tokenize=False, add_generation_prompt=True) for r in records]
start = time.perf_counter()
replies = continue_prompts(target, prompts, 192, args.temperature, args.batch_size, 0, add_special_tokens=False)
seconds = time.perf_counter() - start
tokens = sum(len(target.tokenizer(r, add_special_tokens=False).input_ids) + 1 for r in replies)
print(json.dumps({"prompts": args.prompts, "temperature": args.temperature, "batch_size": args.batch_size,
                  "seconds": round(seconds, 1), "reply_tokens": tokens, "tokens_per_s": round(tokens / seconds, 1)}))
