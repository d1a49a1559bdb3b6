#!/usr/bin/env bash
# Seconds per training step: (time of 12 steps - time of 2 steps) / 10, fresh work dirs, from the
# code in $CODE (default: this checkout). Pauses the background reply run while it measures.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FEAT=${FEAT:?a folder written by python -m eagle3.features}; EXTRA=${EXTRA:-}
PID=$(cat $ROOT/runs/more/replies.pid 2>/dev/null); [ -n "$PID" ] && kill -STOP $PID 2>/dev/null
cd ${CODE:-$ROOT}
t() { rm -rf $ROOT/runs/train_speed; mkdir -p $ROOT/runs/train_speed; local s=$(date +%s.%N); python3 -m eagle3.train --target checkpoints/smollm2 --features $FEAT --out $ROOT/runs/train_speed/head --work $ROOT/runs/train_speed/work --draft-vocab-size 6144 --ttt-steps 6 --max-steps $1 --batch-size ${BS:-8} --lr 8e-4 --warmup 30 --save-every 1000 --seed 0 $EXTRA > $ROOT/runs/train_speed/log.txt 2>&1; echo "$(date +%s.%N) - $s" | bc; }
a=$(t 2); b=$(t 12)
[ -n "$PID" ] && [ -z "$KEEP_PAUSED" ] && kill -CONT $PID 2>/dev/null
echo "steps 2: $a s, steps 12: $b s, per step: $(echo "($b - $a) / 10" | bc -l)"
