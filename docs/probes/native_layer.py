"""What the Python between a bfloat16 step's ops costs: the real target's one-token steps
through eagle3.decoder_layer's Python lean layers against the same steps through its C++
ones (eagle3.native), which run the same ATen ops in the same order. Checks the logits of a
300-token prefill, --steps one-token steps and a 16-token forward bit for bit, then times
the one-token steps interleaved, medians of --rounds rounds.

    PYTHONPATH=. python docs/probes/native_layer.py [--rounds 12] [--steps 20]
"""

import argparse
import statistics
import time

import torch

from eagle3.decoder_layer import use_lean_layers
from eagle3.target import load_target

CONTEXT = 300


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="checkpoints/smollm2")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    target = load_target(args.target, "cpu", "bfloat16")
    prompt = torch.randint(0, 1000, (1, CONTEXT), generator=torch.Generator().manual_seed(0))

    def run(native: bool) -> tuple[list[torch.Tensor], float]:
        """Logits of the prefill, the steps and a 16-token forward, and the steps' seconds."""
        use_lean_layers(target.model, native=native)
        cache = target.new_cache(CONTEXT + args.steps + 16)
        logits = [target.forward(prompt, torch.arange(CONTEXT)[None], cache, logits_to_keep=1).logits]
        began = time.perf_counter()
        for i in range(args.steps):
            logits.append(target.forward(torch.tensor([[5 + i]]), torch.tensor([[cache.length]]), cache,
                                         logits_to_keep=1).logits)
        seconds = time.perf_counter() - began
        logits.append(target.forward(torch.arange(100, 116)[None], cache.length + torch.arange(16)[None], cache).logits)
        return logits, seconds

    python, native = run(False)[0], run(True)[0]
    print(f"logits equal bit for bit (prefill, {args.steps} steps, a 16-token forward):",
          all(torch.equal(a, b) for a, b in zip(python, native, strict=True)))
    times = {False: [], True: []}
    for i in range(args.rounds):
        for layer in ((False, True) if i % 2 == 0 else (True, False)):
            times[layer].append(run(layer)[1] / args.steps * 1e3)
    for layer, values in times.items():
        name = "C++ layers" if layer else "Python layers"
        print(f"{name:14} step: median {statistics.median(values):5.1f} ms (fastest round {min(values):5.1f})")


if __name__ == "__main__":
    main()
