"""Where a training step's time goes, at a given draft vocabulary: the long run's recipe
(lk-lambda, EAGLE 3.1's norms, 6 unrolled steps, batches of 8) from a trained head, widened
first when --draft-vocab-size is larger than its own, on the first --batches batches of a
reply part as eagle3.train draws them (seed 0). Prints each phase's seconds per step and the
operators that take the most time (torch.profiler, self CPU time).

    PYTHONPATH=. python docs/probes/train_step_profile.py --draft-vocab-size 16384
"""

import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile

from eagle3.checkpoint import load_head
from eagle3.data import load_examples
from eagle3.target import bf16_supported, load_target, training_dtype
from eagle3.train import LKLambda, Teacher, TTTLoss, batch_states, length_bucketed_batches, widen_draft_vocab
from eagle3.training import adamw, autocast


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--head", default="checkpoints/scaling/40k-lk-lambda+eagle31/head")
    parser.add_argument("--part", default="assets/data/replies_wordnet/part-00000.jsonl.gz")
    parser.add_argument("--draft-vocab-size", type=int, default=None)
    parser.add_argument("--batches", type=int, default=3, help="profiled steps, after one to warm up")
    parser.add_argument("--rows", type=int, default=15, help="operators to print")
    args = parser.parse_args()
    cpu = torch.device("cpu")
    target = load_target("checkpoints/smollm2", cpu, training_dtype("auto", cpu), attention="sdpa")
    examples = load_examples(args.part, target.tokenizer, 768)
    head = load_head(args.head, target, torch.float32)
    if args.draft_vocab_size and args.draft_vocab_size > head.config.draft_vocab_size:
        widen_draft_vocab(head, target, examples, args.draft_vocab_size)
    head.train()
    for p in target.model.parameters():
        p.requires_grad_(False)
    size = head.config.draft_vocab_size
    draft_rows = target.lm_head_rows(torch.arange(size) + head.d2t)
    model = TTTLoss(head, 6, 0.8, LKLambda())
    optimizer = adamw(head.parameters(), 1e-5)
    use_bf16 = bf16_supported(cpu)
    batches = length_bucketed_batches([len(e.input_ids) for e in examples], 8, torch.Generator().manual_seed(0))
    phases = dict.fromkeys(("target states", "teacher", "forward", "backward", "optimizer"), 0.0)

    def step(indices) -> list[float]:
        marks = [time.perf_counter()]
        input_ids, loss_mask, features, hidden, tokens, normalizers = batch_states(target, None, indices, examples, cpu)
        marks.append(time.perf_counter())
        with torch.no_grad():
            teacher = Teacher.from_states(draft_rows, head.t2d, hidden, tokens, normalizers)
        marks.append(time.perf_counter())
        with autocast(cpu, use_bf16):
            loss = model(features, teacher, input_ids, loss_mask)[0]
        marks.append(time.perf_counter())
        loss.backward()
        marks.append(time.perf_counter())
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        marks.append(time.perf_counter())
        return [b - a for a, b in zip(marks, marks[1:])]

    step(batches[0])
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for indices in batches[1 : 1 + args.batches]:
            for name, seconds in zip(phases, step(indices)):
                phases[name] += seconds / args.batches
    print(f"draft vocabulary {size}, bf16 autocast {use_bf16}, {torch.get_num_threads()} threads, "
          f"{args.batches} steps of 8: {sum(phases.values()):.2f} s a step")
    print(", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items()))
    print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))


if __name__ == "__main__":
    main()
