#!/usr/bin/env bash
# The target's states for every committed reply part, one features folder per part, for
# `eagle3.train --features` (several folders read as one dataset, so any prefix of the parts
# is a training set of its own: the scaling curve's points). The first set's parts come
# first, then the new ones in order. Resumable: a rerun skips the complete shards of each
# part (a part already done costs a model load). Stored in bfloat16, which is what the head
# reads under bfloat16 training, at half float32's disk. Run it in the background:
#   nohup setsid docs/pipeline/features_more.sh > runs/features/features.log 2>&1 &
# FEATURE_PARTS=n stops after the first n parts (the 10k point's 11 come first).
cd "$(dirname "$0")/../.."
mkdir -p runs/features
export PYTHONPATH=.
# The target's arithmetic while extracting: bfloat16, 2.3x faster than float32 here, and what
# inference runs on AMX (docs/training_pipeline.md, "Features in bfloat16").
DTYPE=${DTYPE:-bfloat16}
for part in $(docs/pipeline/reply_parts.sh | head -n "${FEATURE_PARTS:-1000}"); do
  out="runs/features/$(basename "$(dirname "$part")")/$(basename "$part" .jsonl.gz)"
  python3 -m eagle3.features --target checkpoints/smollm2 --data "$part" --out "$out" --dtype "$DTYPE" \
    --save-dtype bfloat16 --max-length 768 --batch-size 8 || exit 1
done
