#!/usr/bin/env bash
# Issue 24's draft vocabulary, measured on its own: two heads from the 40k head, the same STEPS
# steps (the same batches, seed and schedule) over the 50k stage's reply parts in the long
# run's recipe, one keeping the head's 6,144 tokens and one widened to 16,384 (eagle3.train
# --init with a larger --draft-vocab-size), each measured on the chat set and MT-bench by
# docs/pipeline/stage.sh (checkpoints/scaling/abSTEPS-vocabN/; scaling_report.py leaves these
# out of the curve). Resumable as stage.sh is. Run it with nothing else on the cores:
#   [STEPS=480] docs/pipeline/vocab_ab.sh
cd "$(dirname "$0")/../.."
source docs/pipeline/recipes.sh
steps=${STEPS:-480}
for vocab in 6144 16384; do
  # shellcheck disable=SC2046  # recipe_args is a list of arguments
  PASSES=1 docs/pipeline/stage.sh "ab$steps-vocab$vocab" "${STAGE_PARTS[50k]}" checkpoints/scaling/40k-lk-lambda+eagle31/head \
    $(recipe_args lk-lambda+eagle31) --draft-vocab-size "$vocab" --max-steps "$steps" || exit 1
done
