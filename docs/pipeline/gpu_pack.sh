#!/usr/bin/env bash
# The heads docs/pipeline/gpu_curve.sh trained on a lent device, packed to come back: a device
# call returns at most 8 files of 16 MiB each from its $OUT, and a SmolLM2 head's weights are
# 16.6 MiB, so each run brings four files, flat in DEST: NAME.config.json, NAME.log.csv and its
# weights in two pieces, NAME.model.safetensors.part-00 and -01 (two runs a call); a head of
# 16,384 draft tokens is 29 MB, four pieces (one run a call).
#   docs/pipeline/gpu_pack.sh RUNS_DIR DEST            (on the device: DEST is $OUT)
#   docs/pipeline/gpu_pack.sh --unpack DEST RUNS_DIR   (here: RUNS_DIR/NAME/{head,work/log.csv})
set -eu
if [ "$1" = --unpack ]; then
  src=$2 out=$3
  for config in "$src"/*.config.json; do
    name=$(basename "$config" .config.json)
    mkdir -p "$out/$name/head" "$out/$name/work"
    cp "$config" "$out/$name/head/config.json"
    cp "$src/$name.log.csv" "$out/$name/work/log.csv"
    cat "$src/$name.model.safetensors.part-"* > "$out/$name/head/model.safetensors"
    echo "$out/$name: $(stat -c %s "$out/$name/head/model.safetensors") bytes of weights"
  done
  exit 0
fi
runs=$1 dest=$2
mkdir -p "$dest"
for head in "$runs"/*/head; do
  [ -f "$head/model.safetensors" ] || continue
  name=$(basename "$(dirname "$head")")
  cp "$head/config.json" "$dest/$name.config.json"
  cp "$runs/$name/work/log.csv" "$dest/$name.log.csv"
  split -b 9M -d "$head/model.safetensors" "$dest/$name.model.safetensors.part-"
done
ls -l "$dest"
