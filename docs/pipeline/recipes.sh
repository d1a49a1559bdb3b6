#!/usr/bin/env bash
# The long run's recipe (sourced by stage.sh, long_run.sh, scaling.sh, vocab_ab.sh and
# gpu_curve.sh): the eagle3.train arguments every head of it shares, then the options, a name
# each with the arguments it adds to EAGLE-3's recipe (a recipe is options joined by +), and
# the reply parts each stage trains on, the first N docs/pipeline/reply_parts.sh lists (10k: the
# first set and 6 new parts; 20k: 16 new; 40k: all 37 new; 50k: and the WordNet set's 10, the
# writing, roleplay, STEM and humanities questions where MT-bench lags most).
HEAD_ARGS=(--draft-vocab-size 6144 --ttt-steps 6 --warmup 30 --save-dtype bfloat16 --max-length 768 --seed 0)
declare -A OPTIONS=([lk-lambda]="--loss lk-lambda" [vocab16k]="--draft-vocab-size 16384" [eagle31]="--eagle-3.1")
recipe_args() {  # RECIPE -> its eagle3.train arguments (none for the empty recipe: EAGLE-3's)
  local option args=""
  for option in ${1//+/ }; do args+="${OPTIONS[$option]:?unknown recipe option $option} "; done
  echo "$args"
}
declare -A STAGE_PARTS=([10k]=11 [20k]=21 [40k]=42 [50k]=52)
