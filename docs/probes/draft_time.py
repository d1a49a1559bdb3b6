"""Where a draft's time goes: the default pair decodes one prompt with the EAGLE-3 drafter
(the preset's tree), and each round's draft is split into consuming the accepted pairs,
expanding the levels, and within both the head's forwards and its logits. The head's layer
in C++ and in Python (Eagle3DecoderLayer.runs_native forced off) alternate in one process,
medians of --rounds decodes each; their trees may differ at near-ties, so their round counts
may too.

    PYTHONPATH=. python docs/probes/draft_time.py [--rounds 5] [--prompt "..."]
"""

import argparse
import collections
import statistics
import time

import torch

import eagle3.tree as tree_module
from eagle3.checkpoint import load_head
from eagle3.decoding import GenerationConfig, decode
from eagle3.drafters import drafter_named
from eagle3.head import Eagle3DecoderLayer, Eagle3Head
from eagle3.presets import SMOLLM2
from eagle3.prompts import chat_ids
from eagle3.target import load_target

PARTS = {"consume pairs": (tree_module, "consume_pairs"), "expand levels": (tree_module, "expand"),
         "head forwards": (Eagle3Head, "forward"), "head logits": (Eagle3Head, "logits")}


def timed(seconds: collections.Counter, name: str, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds[name] += time.perf_counter() - start
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--prompt", default="Explain how a hash map works, with an example in Python.")
    args = parser.parse_args()
    torch.set_num_threads(2)
    target = load_target(SMOLLM2.target, None, "auto")
    head = load_head(SMOLLM2.head, target, "auto")
    ids = chat_ids(target.tokenizer, [], args.prompt)
    seconds = collections.Counter()
    for name, (owner, attribute) in PARTS.items():
        setattr(owner, attribute, timed(seconds, name, getattr(owner, attribute)))
    native = Eagle3DecoderLayer.runs_native
    layers = {"C++": native, "Python": lambda self: False}
    results = {name: collections.defaultdict(list) for name in layers}
    for repeat in range(args.rounds + 1):
        for name, runs_native in layers.items():
            Eagle3DecoderLayer.runs_native = runs_native
            seconds.clear()
            start = time.perf_counter()
            events = list(decode(target, ids, drafter_named("eagle3", head, SMOLLM2.tree), GenerationConfig(max_new_tokens=128)))
            total = time.perf_counter() - start
            if repeat == 0:  # warm-up
                continue
            proposes = len(events) - 1
            row = results[name]
            row["decode ms"].append(total * 1000)
            row["rounds"].append(proposes)
            row["draft ms a round"].append(sum(e.draft_s for e in events) / proposes * 1000)
            for part in PARTS:
                row[f"{part} ms a round"].append(seconds[part] / proposes * 1000)
    Eagle3DecoderLayer.runs_native = native
    print(f"{'median of ' + str(args.rounds):<28}" + "".join(f"{name:>10}" for name in layers))
    for key in results["C++"]:
        print(f"{key:<28}" + "".join(f"{statistics.median(results[name][key]):>10.2f}" for name in layers))


if __name__ == "__main__":
    main()
