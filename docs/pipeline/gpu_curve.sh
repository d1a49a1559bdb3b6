#!/usr/bin/env bash
# Issue 24's heads trained on one GPU, every run at once: each run is bound by kernel launches,
# not by the GPU's arithmetic, so several share one GPU well.
#   [RUNS="NAME ..."] [BENCH=1] docs/pipeline/gpu_curve.sh OUT MTBENCH_QUESTIONS [TRAIN_SECONDS] [ALL_SECONDS]
# A NAME is STAGE or STAGE-RECIPE: STAGE 10k, 20k, 40k or 50k trains on the stage's committed
# reply parts (STAGE_PARTS in docs/pipeline/recipes.sh, as scaling.sh), RECIPE is options of
# docs/pipeline/recipes.sh joined by + (none: EAGLE-3's recipe). Default RUNS: the four 10k
# recipes and the 20k and 40k points of EAGLE-3's, as run on an H200 on 2026-12-04 (there the
# two larger runs ran out of GPU memory beside the four others: name fewer runs, or smaller ones).
# Every run: a new head, 2 passes, batch 32 (not the CPU runs' 8: on a GPU a step of 32 rows
# costs about what a step of 8 does), lr 1e-3, 6 unrolled steps, the target in bfloat16.
# Writes OUT/NAME/{head,work/log.csv,train.log}; a run still going at TRAIN_SECONDS is stopped,
# keeping the head saved last (OUT/NAME/work/progress.json gives its step; OUT/NAME/stopped says
# so). With BENCH=1 each head is then measured (EAGLE-3 and hybrid, MT-bench then the chat set)
# until ALL_SECONDS from the start; on the H200 that took 35 to 50 s a prompt beside the training
# runs, so measure the heads on a CPU instead (docs/pipeline/stage.sh NAME measure HEAD).
# With CONTINUE=1 each run instead goes on with the CPU's stage of that name
# (checkpoints/scaling/NAME, as docs/pipeline/stage.sh trains it: batch 8, lr 8e-4, 2 passes)
# from its committed head at the step its work/progress.json gives, the optimiser anew, to that
# stage's end: e.g. CONTINUE=1 RUNS=40k-lk-lambda+eagle31 docs/pipeline/gpu_curve.sh OUT mtbench.
# With INIT=HEAD each run starts from that head instead of a new one; with the recipe option
# vocab16k that widens its draft vocabulary (eagle3.train --init), e.g. the 40k head's 6,144
# tokens to 16,384 over the 50k stage's data, which costs 2.6 times a step on a CPU:
#   INIT=checkpoints/scaling/40k-lk-lambda+eagle31/head RUNS=50k-lk-lambda+eagle31+vocab16k PASSES=1 \
#     docs/pipeline/gpu_curve.sh OUT mtbench 420 480
# PASSES, BATCH, LR, MAX_STEPS, PROMPTS_PER_CATEGORY and BENCH_ARGS (more eagle3.bench
# arguments) override the defaults; a smoke test on a CPU:
#   RUNS="10k 10k-eagle31" MAX_STEPS=2 BATCH=2 BENCH=1 PROMPTS_PER_CATEGORY=1 \
#     BENCH_ARGS="--limit 1 --max-new-tokens 8" docs/pipeline/gpu_curve.sh /tmp/smoke mtbench
set -u
cd "$(dirname "$0")/../.."
source docs/pipeline/recipes.sh
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
out=$1 mtbench=$2 train_seconds=${3:-400} all_seconds=${4:-540}
deadline=$(( $(date +%s) + all_seconds ))
mkdir -p "$out"
mapfile -t parts < <(docs/pipeline/reply_parts.sh)
# The dequantised target once, before the runs read it.
python3 -c 'import sys; from eagle3.gguf import dequantized; print(dequantized(sys.argv[1]))' \
  checkpoints/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf || exit 1

run() {  # NAME: train, then (BENCH=1) measure
  local name=$1 dir=$out/$1 stage=${1%%-*} recipe=""
  [ "$stage" = "$name" ] || recipe=${name#*-}
  local count=${STAGE_PARTS[$stage]:?unknown stage $stage} extra
  [ "${#parts[@]}" -ge "$count" ] || { echo "$name: $count reply parts wanted, ${#parts[@]} found" >&2; return; }
  extra=$(recipe_args "$recipe") || return
  local from=(${INIT:+--init "$INIT"}) batch=${BATCH:-32} lr=${LR:-1e-3}
  if [ "${CONTINUE:-0}" = 1 ]; then
    local committed=checkpoints/scaling/$name
    from=(--init "$committed/head" --start-step "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["step"])' \
      "$committed/work/progress.json")") || return
    batch=${BATCH:-8} lr=${LR:-8e-4}
  fi
  mkdir -p "$dir/work"
  # shellcheck disable=SC2086  # extra is a list of arguments
  timeout --signal=INT "$train_seconds" python3 -m eagle3.train --target checkpoints/smollm2 \
    --data "${parts[@]:0:$count}" --out "$dir/head" --work "$dir/work" "${from[@]}" "${HEAD_ARGS[@]}" \
    --epochs "${PASSES:-2}" --batch-size "$batch" --lr "$lr" --save-every 50 \
    ${MAX_STEPS:+--max-steps $MAX_STEPS} $extra > "$dir/train.log" 2>&1
  local status=$?
  [ $status -eq 0 ] || echo "training exited with $status at $(date -u +%T)" > "$dir/stopped"
  [ "${BENCH:-0}" = 1 ] && [ -f "$dir/head/config.json" ] || return
  for set in "mtbench $mtbench 4" "chat assets/prompts/chat.jsonl 2"; do
    read -r report prompts per_category <<< "$set"
    local left=$(( deadline - $(date +%s) ))
    [ $left -gt 30 ] || { echo "no time left for $report" >> "$dir/stopped"; continue; }
    timeout "$left" python3 -m eagle3.bench --draft "$dir/head" --prompts "$prompts" \
      --per-category "${PROMPTS_PER_CATEGORY:-$per_category}" --drafters hybrid --node-budget fixed \
      --no-prompt-lookup --no-llama-cpp ${BENCH_ARGS:-} --json "$dir/$report.json" > "$dir/$report.log" 2>&1
  done
}

started=$(date +%s)
for name in ${RUNS:-40k 20k 10k 10k-lk-lambda 10k-vocab16k 10k-eagle31}; do
  run "$name" &
done
wait
echo "all runs done in $(( $(date +%s) - started )) s"
for dir in "$out"/*/; do
  echo "$(basename "$dir"): $(cat "$dir/work/progress.json" 2>/dev/null || echo 'no head saved') $(cat "$dir/stopped" 2>/dev/null)"
done
