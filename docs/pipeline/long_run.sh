#!/usr/bin/env bash
# Issue 24's whole long run, one resumable chain. Each step skips what is already done, so
# after any interruption (a new machine included) the same command goes on where it stopped:
#   nohup setsid docs/pipeline/long_run.sh > runs/long_run.log 2>&1 &
# Its process group id is in runs/long_run.pgid: pause it around any timing or test with
#   kill -STOP -- -$(cat runs/long_run.pgid)   and resume it with   kill -CONT -- -$(cat runs/long_run.pgid)
# LOSS (default kl) is the loss of the 20k and 40k stages, chosen from the 10k pair.
cd "$(dirname "$0")/../.."
mkdir -p runs
ps -o pgid= $$ | tr -d ' ' > runs/long_run.pgid
set -e
# The 10k point's data first, and its two heads: the recipe question (EAGLE-3's cross-entropy
# or the LK loss that optimises acceptance) is answered before the larger stages start.
FEATURE_PARTS=11 docs/pipeline/features_more.sh
LOSS=kl docs/pipeline/scaling.sh 10k
LOSS=lk-lambda docs/pipeline/scaling.sh 10k
docs/pipeline/features_more.sh
docs/pipeline/scaling.sh 20k 40k
PYTHONPATH=. python3 docs/pipeline/scaling_report.py
