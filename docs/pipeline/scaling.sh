#!/usr/bin/env bash
# Issue 24's scaling curve, as one training run over growing data: each stage trains on more
# reply parts (docs/pipeline/reply_parts.sh: the first set's 5 parts, then the new ones in
# order, 1,024 conversations a part, the last first-set part 274) for PASSES passes over all
# of its data, starting from the stage before's head; every head is measured on the project's
# chat set and on MT-bench (docs/pipeline/stage.sh). The 4k point is the head shipped
# until 2026-12-05 (checkpoints/scaling/4k/head); the 10k stage trains a new head.
#   [RECIPE=name TRAIN_ARGS="eagle3.train arguments"] docs/pipeline/scaling.sh [STAGE ...]
# (default stages: 10k 20k 40k 50k). A RECIPE names a change to the training (TRAIN_ARGS, e.g.
# "--loss lk-lambda" or "--eagle-3.1"): its stages are named 10k-RECIPE and so on, a curve of
# their own. Resumable (stage.sh). Run it with nothing else on the cores.
cd "$(dirname "$0")/../.."
source docs/pipeline/recipes.sh  # STAGE_PARTS: each stage's reply parts
suffix=${RECIPE:+-$RECIPE}
# Passes over each stage's parts: the 50k stage makes one, from the 40k head, which has made
# two over everything but the WordNet parts.
declare -A PASSES_OVER=([10k]=2 [20k]=2 [40k]=2 [50k]=1)
declare -A INIT=([10k]=- [20k]=checkpoints/scaling/10k$suffix/head [40k]=checkpoints/scaling/20k$suffix/head
  [50k]=checkpoints/scaling/40k$suffix/head)
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(10k 20k 40k 50k)
for stage in "${stages[@]}"; do
  init=${INIT[$stage]}
  if [ "$init" != - ] && [ ! -f "$init/config.json" ] && [[ $RECIPE == *+* ]]; then
    # A combination of recipe options (long_run.sh) has no 10k head of its own; any other
    # missing head stops the stage (eagle3.train says so).
    echo "scaling: no $init for the combination $RECIPE; stage $stage$suffix trains a new head"
    init=-
  fi
  # shellcheck disable=SC2086  # TRAIN_ARGS is a list of arguments
  PASSES=${PASSES_OVER[$stage]} docs/pipeline/stage.sh "$stage$suffix" "${STAGE_PARTS[$stage]}" "$init" ${TRAIN_ARGS:-} || exit 1
done
# The 4k head, measured after a trained one, so that the first hours train.
docs/pipeline/stage.sh 4k measure checkpoints/scaling/4k/head || exit 1
