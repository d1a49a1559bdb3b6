"""Ship a head of the long run as the default pair's: copy its weights and config into
checkpoints/smollm2-eagle3/ and write the training.json beside them from what its stage
folder recorded.

    PYTHONPATH=. python docs/pipeline/ship_head.py 10k [--note "what the logs do not say"]

training.json gives the command that trained the head (the stage's `trained` marker), its
data (the reply parts it read: conversations, replies, the tokens it learned from), the
training hours and steps (work/log.csv, summed as scaling_report.py sums them), the machine
it finished on, and its held-out results (the stage's chat.json and mtbench.json: tau,
acceptance by position, the CPU they were measured on, the preset tree at full size). The replies' own hours are those
of docs/training_pipeline.md, "The data for the larger head"; --note records what the
files do not (machines of earlier sessions, say).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil

from tqdm import tqdm
from transformers import AutoTokenizer

from docs.pipeline.scaling_report import POINTS, SETS, read_rows, training_rows
from eagle3.data import load_examples, read_jsonl
from eagle3.gguf import dequantized, find_gguf
from eagle3.train import parse_args

SHIPPED = "checkpoints/smollm2-eagle3"


def read_marker(path: str) -> dict[str, str]:
    """stage.sh's `trained` marker: lines of `key: value` (finished, cpu, command)."""
    with open(path, encoding="utf-8") as f:
        return dict(line.rstrip("\n").split(": ", 1) for line in f if ": " in line)


def trained_args(command: str):
    """The arguments of the eagle3.train command line, read by the trainer's own parser (its
    defaults included)."""
    words = shlex.split(command)
    return parse_args(words[words.index("eagle3.train") + 1:])


def data_size(target: str, parts: list[str], max_length: int) -> dict:
    """Conversations, replies and tokens of the reply parts, by the target's tokenizer and
    chat template, as eagle3.train encodes them (cut at max_length)."""
    tokenizer = AutoTokenizer.from_pretrained(dequantized(find_gguf(target)))
    size = {"parts": len(parts), "conversations": 0, "replies": 0, "tokens": 0, "learned_tokens": 0}
    for part in tqdm(parts, desc="counting", unit="part"):
        records = read_jsonl(part)
        size["conversations"] += len(records)
        size["replies"] += sum(turn.get("role", turn.get("from")) in ("assistant", "gpt")
                               for record in records for turn in record["conversations"])
        for example in load_examples(part, tokenizer, max_length):
            size["tokens"] += len(example.input_ids)
            size["learned_tokens"] += sum(example.loss_mask)
    return size


def bench_results(runs: str, stage: str) -> dict:
    """Per prompt set the stage's bench (scaling_report.read_rows): tau, speedups, acceptance
    by position, the CPU and dtype; each measured with the preset tree at full size (stage.sh)."""
    keep = ("eagle3_tau", "hybrid_tau", "eagle3_speedup", "hybrid_speedup", "acceptance", "machine")
    return {SETS[row["set"]]: {key: row[key] for key in keep} for row in read_rows(runs) if row["head"] == stage}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", help="a folder under --runs with a trained head (e.g. 10k)")
    parser.add_argument("--runs", default="checkpoints/scaling")
    parser.add_argument("--out", default=SHIPPED)
    parser.add_argument("--note", default="", help="what the stage's files do not record")
    args = parser.parse_args(argv)
    stage = os.path.join(args.runs, args.stage)
    marker = os.path.join(stage, "trained")
    if not os.path.exists(marker):
        print(f"error: {stage} has no finished training run (no {marker}); ship a trained head")
        return 2
    trained = read_marker(marker)
    command = trained_args(trained["command"])
    log = next(row for row in training_rows(args.runs) if row["head"] == args.stage)
    point = args.stage.partition("-")[0]
    record = {
        "target": f"{command.target} (SmolLM2-135M-Instruct, Q4_1 GGUF dequantised)",
        "summary": f"the long run's {args.stage} head (docs/training_pipeline.md, 'The long run'): "
                   f"{POINTS.get(point, 0):,} conversations answered by the target itself, trained online",
        "command": trained["command"],
        "finished": trained["finished"],
        "machine": f"{trained['cpu']} (the machine the run finished on)",
        "note": args.note,
        "data": data_size(command.target, command.data, command.max_length),
        "training": {"steps": log["steps"], "passes": round(log["epoch"], 3), "hours": round(log["hours"], 2),
                     "acceptance_by_unrolled_step_last_100_steps": [round(a, 3) for a in log["accept"]]},
        "results": bench_results(args.runs, args.stage),
    }
    os.makedirs(args.out, exist_ok=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copyfile(os.path.join(stage, "head", name), os.path.join(args.out, name))
    with open(os.path.join(args.out, "training.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"shipped {stage}/head as {args.out}: {json.dumps(record['results'], indent=1)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
