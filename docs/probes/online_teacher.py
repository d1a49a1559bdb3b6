"""What online training's target costs per batch, and what computing its greedy tokens and
log-normalisers (the full-vocabulary products) only where the next token is learned saves:
the target's states, its stats at every position, its stats where learned, for the first
--batches length-bucketed batches of 8 (as eagle3.train draws them, seed 0) of a reply part.

    PYTHONPATH=. python docs/probes/online_teacher.py [--part assets/data/replies_more/part-00001.jsonl.gz]
"""

import argparse
import time

import torch

from eagle3.data import load_examples, pad_batch
from eagle3.target import load_target, training_dtype
from eagle3.train import length_bucketed_batches, shift


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="assets/data/replies_more/part-00001.jsonl.gz")
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    cpu = torch.device("cpu")
    target = load_target("checkpoints/smollm2", cpu, training_dtype("auto", cpu), attention="sdpa")  # as eagle3.train does
    examples = load_examples(args.part, target.tokenizer, 768)
    batches = length_bucketed_batches([len(e.input_ids) for e in examples], 8, torch.Generator().manual_seed(0))
    totals = {"states": 0.0, "stats everywhere": 0.0, "stats where learned": 0.0}
    for indices in batches[: args.batches]:
        ids, loss_mask, attention = pad_batch([examples[i] for i in indices])
        started = time.perf_counter()
        _, hidden = target.training_states(ids, attention)
        states = time.perf_counter()
        target.teacher_stats(hidden.flatten(0, 1))
        everywhere = time.perf_counter()
        needed = shift(loss_mask, 1) > 0
        target.teacher_stats(hidden[needed])
        learned = time.perf_counter()
        for name, seconds in zip(totals, (states - started, everywhere - states, learned - everywhere)):
            totals[name] += seconds
        print(f"batch {tuple(ids.shape)}: states {states - started:.2f} s, stats at {ids.numel()} positions "
              f"{everywhere - states:.2f} s, at the {int(needed.sum())} learned {learned - everywhere:.2f} s")
    print(f"{target.dtype}, {args.batches} batches: " + ", ".join(f"{k} {v:.2f} s" for k, v in totals.items()))


if __name__ == "__main__":
    main()
