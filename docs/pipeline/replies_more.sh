#!/usr/bin/env bash
# The target's replies to the training prompts, in parts of 1024 conversations written to
# committed folders as they come: assets/data/train_prompts_more.jsonl.gz into
# assets/data/replies_more/, then assets/data/train_prompts.jsonl into assets/data/replies_first/,
# then assets/data/train_prompts_wordnet.jsonl.gz into assets/data/replies_wordnet/ (the data
# of the 50k stage: docs/pipeline/reply_parts.sh lists its parts after the others).
# Resumable: a rerun skips the parts already there. One process per part, so that each
# part starts from a fresh heap. Run it in the background:
#   nohup docs/pipeline/replies_more.sh > runs/more/replies.log 2>&1 &
# Its process id is in runs/more/replies.pid (kill -STOP / -CONT the process group around any timing:
#   kill -STOP -- -$(cat runs/more/replies.pid)).
cd "$(dirname "$0")/../.."
mkdir -p runs/more
echo $$ > runs/more/replies.pid
export PYTHONPATH=.
replies() {  # DATA PARTS RECORDS WORK
  local parts=$(( ($3 + 1023) / 1024 ))
  for ((i = 1; i <= parts; i++)); do
    [ -f "$2/part-$(printf %05d $((i - 1))).jsonl.gz" ] && continue  # made already: no need to load the target
    python3 -m eagle3.features --target checkpoints/smollm2 --data "$1" --out "runs/$4" --replies "$2" \
      --regenerate --regenerate-only --dtype bfloat16 --max-new-tokens 192 --batch-size 128 \
      --temperatures 0,0,0,0.7 --chunk-size 1024 --limit $((i * 1024)) || exit 1
  done
}
replies assets/data/train_prompts_more.jsonl.gz assets/data/replies_more 37784 more/replies
replies assets/data/train_prompts.jsonl assets/data/replies_first 4370 first/replies
replies assets/data/train_prompts_wordnet.jsonl.gz assets/data/replies_wordnet 10000 wordnet/replies
