#!/usr/bin/env bash
# Issue 24's whole long run, one resumable chain. Each step skips what is already done, so
# after any interruption (a new machine included) the same command goes on where it stopped:
#   nohup setsid docs/pipeline/long_run.sh > runs/long_run.log 2>&1 &
# Its process group id is in runs/long_run.pgid: pause it around any timing or test with
#   kill -STOP -- -$(cat runs/long_run.pgid)   and resume it with   kill -CONT -- -$(cat runs/long_run.pgid)
# RECIPE is the recipe of the 20k and 40k stages, options joined by + (e.g. vocab16k+eagle31;
# empty: EAGLE-3's as it is). Unset, it is lk-lambda+eagle31, the two options that paid when the
# four 10k recipes were trained side by side on a GPU (docs/pipeline/gpu_curve.sh; the table in
# docs/training_pipeline.md, "Recipe options, trained on a GPU"); RECIPE=measure trains a 10k head
# of each option on this CPU instead (about 3 hours each on the AMX Xeon) and keeps every option
# whose held-out tau paid (docs/pipeline/pick_recipe.py). TRAIN_ARGS, unset, follows from RECIPE.
cd "$(dirname "$0")/../.."
mkdir -p runs
ps -o pgid= $$ | tr -d ' ' > runs/long_run.pgid
set -e
# The 10k point first, in EAGLE-3's recipe; with RECIPE=measure, a head for each recipe option
# on the same data (the LK loss that optimises acceptance, a draft vocabulary of 16,384 instead
# of 6,144, EAGLE 3.1's norms), so the recipe is chosen before the larger stages start.
source docs/pipeline/recipes.sh
RECIPE= TRAIN_ARGS= docs/pipeline/scaling.sh 10k
RECIPE=${RECIPE-lk-lambda+eagle31}
if [ "$RECIPE" = measure ]; then
  for option in lk-lambda vocab16k eagle31; do
    RECIPE=$option TRAIN_ARGS=$(recipe_args $option) docs/pipeline/scaling.sh 10k
  done
  picked=$(PYTHONPATH=. python3 docs/pipeline/pick_recipe.py lk-lambda vocab16k eagle31)
  RECIPE=$(echo $picked | tr ' ' +)
fi
[ -n "${TRAIN_ARGS+set}" ] || TRAIN_ARGS=$(recipe_args "$RECIPE") || exit 1
echo "long run: the 20k and 40k stages keep the options: ${RECIPE:-none} ${TRAIN_ARGS}"
RECIPE=$RECIPE TRAIN_ARGS=$TRAIN_ARGS docs/pipeline/scaling.sh 20k 40k
# The data after the 40k stage: the target's replies to the WordNet prompts (the parts not made
# yet; each is committed as it comes), then one pass over all the data from the 40k head.
docs/pipeline/replies_more.sh
# The draft vocabulary on its own before the 50k stage: 480 steps from the 40k head at its
# 6,144 tokens and widened to 16,384 (docs/training_pipeline.md, "What the draft vocabulary
# leaves out of reach"); a win on MT-bench would make the 50k stage worth widening.
docs/pipeline/vocab_ab.sh
RECIPE=$RECIPE TRAIN_ARGS=$TRAIN_ARGS docs/pipeline/scaling.sh 50k
PYTHONPATH=. python3 docs/pipeline/scaling_report.py
