#!/usr/bin/env bash
# The target's replies to assets/data/train_prompts_more.jsonl.gz, in parts of 1024
# conversations written to assets/data/replies_more/ (committed as they come). Resumable:
# a rerun skips the parts already there. Run it in the background:
#   nohup docs/pipeline/replies_more.sh > runs/more/replies.log 2>&1 &
# Its process id is in runs/more/replies.pid (kill -STOP / -CONT it around any timing).
cd "$(dirname "$0")/../.."
mkdir -p runs/more
echo $$ > runs/more/replies.pid
PYTHONPATH=. exec python3 -m eagle3.features --target checkpoints/smollm2 --data assets/data/train_prompts_more.jsonl.gz \
  --out runs/more/features --replies assets/data/replies_more --regenerate --regenerate-only --dtype bfloat16 \
  --max-new-tokens 192 --batch-size 128 --temperatures 0,0,0,0.7 --chunk-size 1024
