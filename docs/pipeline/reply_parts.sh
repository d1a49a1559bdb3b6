#!/usr/bin/env bash
# The committed reply parts, one path a line, in the order every stage of the long run reads
# them: the first set's, then the new ones, then the WordNet set's (those made so far; the
# 50k stage's data); stage.sh trains on the first COUNT.
cd "$(dirname "$0")/../.." && ls assets/data/replies_{first,more,wordnet}/part-*.jsonl.gz 2>/dev/null
