#!/usr/bin/env bash
# One head of issue 24's long run: train it on the first COUNT feature folders
# (docs/pipeline/features_more.sh: the first set's 5 parts, then the new ones in order) and
# measure it (tau and speed, EAGLE-3 and hybrid) on the project's chat set and on MT-bench.
#   docs/pipeline/stage.sh NAME COUNT [INIT_HEAD|-] [extra eagle3.train arguments]
# writes runs/scaling/NAME/{head,work,chat.json,mtbench.json}. INIT "-" trains a new head;
# "measure" as COUNT only measures the head at INIT. Resumable: a finished training run leaves
# NAME/trained (when, on which CPU, the command) and is not run again; an interrupted one
# resumes from its last saved step (--work; the head folder exists from the first save on, so
# it says nothing about being done), and a report that exists is not measured again.
cd "$(dirname "$0")/../.."
export PYTHONPATH=.
name=$1 count=$2 init=${3:--}
shift 3 2>/dev/null || shift $#
dir=runs/scaling/$name
mkdir -p "$dir"
head=$dir/head
if [ "$count" = measure ]; then
  head=$init
elif [ ! -f "$dir/trained" ]; then
  mapfile -t parts < <(ls -d runs/features/replies_first/part-* runs/features/replies_more/part-* | head -n "$count")
  [ "${#parts[@]}" -eq "$count" ] || { echo "stage $name: $count feature folders wanted, ${#parts[@]} found"; exit 1; }
  [ "$init" = - ] && init=""
  train=(python3 -m eagle3.train --target checkpoints/smollm2 --features "${parts[@]}" --out "$head"
    --work "$dir/work" ${init:+--init "$init"} --draft-vocab-size 6144 --ttt-steps 6 --epochs "${PASSES:-2}"
    --batch-size 8 --lr 8e-4 --warmup 30 --save-every 40 --save-dtype bfloat16 --max-length 768 --seed 0 "$@")
  "${train[@]}" || exit 1
  # The marker records what made the head and where it finished (for its training.json).
  { echo "finished: $(date -u +%FT%TZ)"
    echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores$(grep -q amx_tile /proc/cpuinfo && echo ', AMX')"
    echo "command: ${train[*]}"; } > "$dir/trained"
fi
[ -f "$dir/chat.json" ] || python3 -m eagle3.bench --draft "$head" --prompts assets/prompts/chat.jsonl --per-category 2 \
  --drafters hybrid --no-prompt-lookup --no-llama-cpp --json "$dir/chat.json" || exit 1
[ -f "$dir/mtbench.json" ] || python3 -m eagle3.bench --draft "$head" --prompts mtbench --per-category 4 \
  --drafters hybrid --no-prompt-lookup --no-llama-cpp --json "$dir/mtbench.json" || exit 1
