"""How predictable the target's own greedy output is, per prompt set: the probability it gives
its greedy token, and its entropy, at every generated position of a bench JSON's plain
decoding (`prompt_ids` + `plain_ids` per prompt, one teacher-forced forward each). A set
where the target itself is less sure of its next token is harder for any draft head; two
sets alike here but apart in tau differ in what the head learned.

    PYTHONPATH=. python docs/probes/target_confidence.py checkpoints/scaling/10k/chat.json checkpoints/scaling/10k/mtbench.json
"""

import argparse
import json

import torch

from eagle3.target import load_target


def confidence(target, prompt_ids: list[int], output_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """p(greedy token) [n] and entropy in nats [n] at the n generated positions."""
    ids = torch.tensor([prompt_ids + output_ids])
    with torch.inference_mode():
        logits = target.model(input_ids=ids).logits[0, len(prompt_ids) - 1 : -1].float()
    logp = torch.log_softmax(logits, -1)
    return logp.exp().amax(-1), -(logp.exp() * logp).sum(-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", nargs="+", help="bench JSON files (eagle3.bench --json)")
    parser.add_argument("--target", default="checkpoints/smollm2")
    args = parser.parse_args()
    target = load_target(args.target, "cpu", "float32")
    print("| bench | tau | positions | mean p(greedy) | share with p > 0.9 | share with p < 0.5 | mean entropy (nats) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path in args.bench:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        pieces = [confidence(target, p["prompt_ids"], p["plain_ids"]) for p in report["prompts"]]
        top, entropy = (torch.cat(t) for t in zip(*pieces))
        print(f"| {path} | {report['summary']['tau']:.2f} | {len(top)} | {top.mean():.3f} | {(top > 0.9).float().mean():.3f} | "
              f"{(top < 0.5).float().mean():.3f} | {entropy.mean():.3f} |")


if __name__ == "__main__":
    main()
