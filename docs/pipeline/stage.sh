#!/usr/bin/env bash
# One head of issue 24's long run: train it on the first COUNT committed reply parts
# (docs/pipeline/reply_parts.sh), the target run on each batch (online: no features to compute
# first, which a 3-hour session on a new machine would spend its time on and then lose), and
# measure it (tau and speed, EAGLE-3 and hybrid) on the project's chat set and on MT-bench,
# with the preset tree at its full size (--node-budget fixed), so that tau is the head's and
# not the machine's: the points of the curve may be measured on different CPUs.
#   docs/pipeline/stage.sh NAME COUNT [INIT_HEAD|-] [extra eagle3.train arguments]
# writes checkpoints/scaling/NAME/{head,work/log.csv,work/progress.json,trained,chat.json,
# mtbench.json}, which each stop commits (the head once a stop), and work/state.pt, the
# optimiser state (ignored).
# INIT "-" trains a new head; "measure" as COUNT only measures the head at INIT. Resumable: a
# finished training run leaves NAME/trained (when, on which CPU, the command) and is not run
# again; an interrupted one resumes from its last saved step, from its work state where it is
# there, else (a new machine) from the committed head at the step work/progress.json gives
# (eagle3.train --start-step); a report that exists is not measured again.
cd "$(dirname "$0")/../.."
export PYTHONPATH=.
source docs/pipeline/recipes.sh
name=$1 count=$2 init=${3:--}
shift 3 2>/dev/null || shift $#
dir=checkpoints/scaling/$name
work=$dir/work
mkdir -p "$dir"
head=$dir/head
if [ "$count" = measure ]; then
  head=$init
elif [ ! -f "$dir/trained" ]; then
  mapfile -t parts < <(docs/pipeline/reply_parts.sh | head -n "$count")
  [ "${#parts[@]}" -eq "$count" ] || { echo "stage $name: $count reply parts wanted, ${#parts[@]} found"; exit 1; }
  [ "$init" = - ] && init=""
  start=0
  if [ ! -f "$work/state.pt" ] && [ -f "$work/progress.json" ]; then
    start=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["step"])' "$work/progress.json")
    init=$head
    echo "stage $name: no optimiser state here; going on from the committed head at step $start"
  fi
  train=(python3 -m eagle3.train --target checkpoints/smollm2 --data "${parts[@]}" --out "$head"
    --work "$work" ${init:+--init "$init"} --start-step "$start" "${HEAD_ARGS[@]}" --epochs "${PASSES:-2}"
    --batch-size 8 --lr 8e-4 --save-every 40 "$@")
  "${train[@]}" || exit 1
  # The marker records what made the head and where it finished (for its training.json).
  { echo "finished: $(date -u +%FT%TZ)"
    echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores$(grep -q amx_tile /proc/cpuinfo && echo ', AMX')"
    echo "command: ${train[*]}"; } > "$dir/trained"
fi
measure() {  # REPORT PROMPTS PER_CATEGORY: one prompt set's bench, unless its report exists
  [ -f "$dir/$1.json" ] || python3 -m eagle3.bench --draft "$head" --prompts "$2" --per-category "$3" \
    --drafters hybrid --node-budget fixed --no-prompt-lookup --no-llama-cpp --json "$dir/$1.json" || exit 1
}
measure chat assets/prompts/chat.jsonl 2
measure mtbench mtbench 4
