#!/usr/bin/env bash
# The committed reply parts, one path a line, in the order every stage of the long run reads
# them: the first set's, then the new ones; stage.sh trains on the first COUNT.
cd "$(dirname "$0")/../.." && ls assets/data/replies_first/part-*.jsonl.gz assets/data/replies_more/part-*.jsonl.gz
