#!/usr/bin/env bash
# Issue 24's whole long run, one resumable chain. Each step skips what is already done, so
# after any interruption (a new machine included) the same command goes on where it stopped:
#   nohup setsid docs/pipeline/long_run.sh > runs/long_run.log 2>&1 &
# Its process group id is in runs/long_run.pgid: pause it around any timing or test with
#   kill -STOP -- -$(cat runs/long_run.pgid)   and resume it with   kill -CONT -- -$(cat runs/long_run.pgid)
# RECIPE and TRAIN_ARGS (default: none, EAGLE-3's recipe) are those of the 20k and 40k
# stages, chosen from the 10k heads (docs/pipeline/scaling.sh).
cd "$(dirname "$0")/../.."
mkdir -p runs
ps -o pgid= $$ | tr -d ' ' > runs/long_run.pgid
set -e
# The 10k point's data first, and a head for each recipe to compare on it (EAGLE-3's, the LK
# loss that optimises acceptance, a draft vocabulary of 16,384 instead of 6,144, EAGLE 3.1's
# norms), so the recipe is chosen before the larger stages start.
FEATURE_PARTS=11 docs/pipeline/features_more.sh
RECIPE= TRAIN_ARGS= docs/pipeline/scaling.sh 10k
RECIPE=lk-lambda TRAIN_ARGS="--loss lk-lambda" docs/pipeline/scaling.sh 10k
RECIPE=vocab16k TRAIN_ARGS="--draft-vocab-size 16384" docs/pipeline/scaling.sh 10k
RECIPE=eagle31 TRAIN_ARGS="--eagle-3.1" docs/pipeline/scaling.sh 10k
docs/pipeline/features_more.sh
docs/pipeline/scaling.sh 20k 40k
PYTHONPATH=. python3 docs/pipeline/scaling_report.py
