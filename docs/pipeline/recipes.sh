#!/usr/bin/env bash
# The long run's recipe options (sourced by long_run.sh and gpu_curve.sh): a name each, and the
# eagle3.train arguments it adds to EAGLE-3's recipe. A recipe is options joined by +.
declare -A OPTIONS=([lk-lambda]="--loss lk-lambda" [vocab16k]="--draft-vocab-size 16384" [eagle31]="--eagle-3.1")
recipe_args() {  # RECIPE -> its eagle3.train arguments (none for the empty recipe: EAGLE-3's)
  local option args=""
  for option in ${1//+/ }; do args+="${OPTIONS[$option]:?unknown recipe option $option} "; done
  echo "$args"
}
