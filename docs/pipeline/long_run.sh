#!/usr/bin/env bash
# Issue 24's whole long run, one resumable chain. Each step skips what is already done, so
# after any interruption (a new machine included) the same command goes on where it stopped:
#   nohup setsid docs/pipeline/long_run.sh > runs/long_run.log 2>&1 &
# Its process group id is in runs/long_run.pgid: pause it around any timing or test with
#   kill -STOP -- -$(cat runs/long_run.pgid)   and resume it with   kill -CONT -- -$(cat runs/long_run.pgid)
# RECIPE is the recipe of the 20k and 40k stages, options joined by + (e.g. vocab16k+eagle31;
# empty: EAGLE-3's as it is). Unset, it is every option whose 10k head paid
# (docs/pipeline/pick_recipe.py). TRAIN_ARGS, unset, follows from it.
cd "$(dirname "$0")/../.."
mkdir -p runs
ps -o pgid= $$ | tr -d ' ' > runs/long_run.pgid
set -e
# The 10k point's data first, and a head for each recipe option to compare on it (the LK loss
# that optimises acceptance, a draft vocabulary of 16,384 instead of 6,144, EAGLE 3.1's
# norms) beside EAGLE-3's recipe, so the recipe is chosen before the larger stages start.
declare -A OPTIONS=([lk-lambda]="--loss lk-lambda" [vocab16k]="--draft-vocab-size 16384" [eagle31]="--eagle-3.1")
RECIPE= TRAIN_ARGS= docs/pipeline/scaling.sh 10k
for option in lk-lambda vocab16k eagle31; do
  RECIPE=$option TRAIN_ARGS=${OPTIONS[$option]} docs/pipeline/scaling.sh 10k
done
if [ -z "${RECIPE+set}" ]; then
  picked=$(PYTHONPATH=. python3 docs/pipeline/pick_recipe.py lk-lambda vocab16k eagle31)
  RECIPE=$(echo $picked | tr ' ' +)
fi
if [ -z "${TRAIN_ARGS+set}" ]; then
  TRAIN_ARGS=""
  for option in ${RECIPE//+/ }; do TRAIN_ARGS+="${OPTIONS[$option]:?unknown recipe option $option} "; done
fi
echo "long run: the 20k and 40k stages keep the options: ${RECIPE:-none} ${TRAIN_ARGS}"
RECIPE=$RECIPE TRAIN_ARGS=$TRAIN_ARGS docs/pipeline/scaling.sh 20k 40k
PYTHONPATH=. python3 docs/pipeline/scaling_report.py
