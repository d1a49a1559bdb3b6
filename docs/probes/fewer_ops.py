"""What eagle3.decoder_layer's lean forwards save on a bfloat16 plain step: the real target's
one-token step through transformers' own decoder layers (eagle3.invariant's arithmetic)
against the same step through the lean layers in Python, which compute the same bits with
fewer dispatches, and in C++ (eagle3.native), which run the same ATen ops without the Python
between them. Interleaved, medians of --rounds rounds of 20 steps after a 300-token prefill;
the logits of the steps and of a 16-token forward after them must be equal bit for bit.
Then the op calls a step dispatches (profiler).

    PYTHONPATH=. python docs/probes/fewer_ops.py [--rounds 12]
"""

import argparse
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from eagle3.decoder_layer import forward_kind, use_lean_layers
from eagle3.target import load_target

CONTEXT, STEPS, TREE = 300, 20, 16
# each layer kind as use_lean_layers' (enabled, native)
LAYERS = {"transformers": (False, False), "Python": (True, False), "C++": (True, True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="checkpoints/smollm2")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    target = load_target(args.target, "cpu", "bfloat16")
    cache = target.new_cache(CONTEXT + STEPS + TREE)
    target.forward(torch.randint(0, 1000, (1, CONTEXT)), torch.arange(CONTEXT)[None], cache, logits_to_keep=1)

    def use(kind: str) -> None:
        enabled, native = LAYERS[kind]
        use_lean_layers(target.model, enabled, native)
        if forward_kind(target.layers[0]) != kind:
            raise SystemExit(f"the {kind} layers are not available here (eagle3.native could not build them?)")

    def run(kind: str) -> list[torch.Tensor]:
        use(kind)
        cache.truncate(CONTEXT)
        return [target.forward(torch.tensor([[5 + i]]), torch.tensor([[CONTEXT + i]]), cache, logits_to_keep=1).logits
                for i in range(STEPS)]

    def tree_forward() -> torch.Tensor:
        """A 16-token forward after the steps (what a verified tree runs), causal."""
        return target.forward(torch.arange(100, 100 + TREE)[None], cache.length + torch.arange(TREE)[None],
                              cache).logits

    outputs = {kind: run(kind) + [tree_forward()] for kind in LAYERS}
    stock = outputs.pop("transformers")
    for kind, logits in outputs.items():
        print(f"{kind} layers' logits equal the stock layers':", all(map(torch.equal, logits, stock)))
    times = {kind: [] for kind in LAYERS}
    kinds = list(LAYERS)
    for i in range(args.rounds):
        for kind in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:  # each kind first in turn
            start = time.perf_counter()
            run(kind)
            times[kind].append((time.perf_counter() - start) / STEPS * 1e3)
    for kind, values in times.items():
        name = f"{kind} layers"
        print(f"{name:19} step: median {statistics.median(values):5.1f} ms (fastest round {min(values):5.1f})")
    for kind in times:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run(kind)
        print(f"{kind}: {sum(e.count for e in prof.key_averages()) / STEPS:.0f} op calls a step")


if __name__ == "__main__":
    main()
