#!/usr/bin/env bash
# Issue 24's scaling curve, as one training run over growing data: stage k trains on the
# first PARTS[k] feature folders (docs/pipeline/features_more.sh: the first set's 5 parts,
# then the new ones in order, 1,024 conversations a part, the last first-set part 274),
# starting from stage k-1's head, for PASSES passes over all of its data; each stage's head
# is then measured (tau and speed, EAGLE-3 and hybrid) on the project's chat set and on
# MT-bench. The 4k point is the shipped head (checkpoints/smollm2-eagle3).
# Resumable: a stage whose head exists is not trained again, a training run resumes from its
# last saved step (--work), and a report that exists is not measured again. Run it with
# nothing else on the cores:
#   nohup setsid docs/pipeline/scaling.sh > runs/scaling/scaling.log 2>&1 &
cd "$(dirname "$0")/../.."
mkdir -p runs/scaling
echo $$ > runs/scaling/scaling.pid
export PYTHONPATH=.
PASSES=${PASSES:-2}
mapfile -t PARTS < <(ls -d runs/features/replies_first/part-* runs/features/replies_more/part-* 2>/dev/null)
# stage name, feature folders (10k: the first set and 6 new parts; 20k: 16 new; 40k: all)
STAGES=("10k 11" "20k 21" "40k ${#PARTS[@]}")

measure() {  # HEAD DIR
  [ -f "$2/chat.json" ] || python3 -m eagle3.bench --draft "$1" --prompts assets/prompts/chat.jsonl --per-category 2 \
    --drafters hybrid --no-prompt-lookup --json "$2/chat.json" || exit 1
  [ -f "$2/mtbench.json" ] || python3 -m eagle3.bench --draft "$1" --prompts mtbench --per-category 4 \
    --drafters hybrid --no-prompt-lookup --json "$2/mtbench.json" || exit 1
}

measure checkpoints/smollm2-eagle3 runs/scaling/4k
init=""
for stage in "${STAGES[@]}"; do
  read -r name count <<< "$stage"
  dir=runs/scaling/$name
  if [ ! -f "$dir/head/config.json" ]; then
    python3 -m eagle3.train --target checkpoints/smollm2 --features "${PARTS[@]:0:$count}" --out "$dir/head" \
      --work "$dir/work" ${init:+--init "$init"} --draft-vocab-size 6144 --ttt-steps 6 --epochs "$PASSES" \
      --batch-size 8 --lr 8e-4 --warmup 30 --save-every 40 --save-dtype bfloat16 --max-length 768 --seed 0 || exit 1
  fi
  measure "$dir/head" "$dir"
  init=$dir/head
done
