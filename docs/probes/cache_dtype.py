"""Which cache a bfloat16 plain step reads faster: the target's keys and values kept in
float64, converted once when written (the decoders' cache, eagle3.invariant.cache_dtype),
or kept in bfloat16 and converted to float64 by each layer's attention at every step, which
reads a quarter of the bytes. The real target's one-token steps after a prefill of
each --contexts length, the two caches interleaved, medians of --rounds rounds of 20 steps;
the logits must be equal bit for bit (bfloat16 converts to float64 exactly).

    PYTHONPATH=. python docs/probes/cache_dtype.py [--contexts 100 300 1000] [--rounds 6]
"""

import argparse
import statistics
import time

import torch

from eagle3.kv_cache import KVCache
from eagle3.target import load_target

STEPS = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="checkpoints/smollm2")
    parser.add_argument("--contexts", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    target = load_target(args.target, "cpu", "bfloat16")
    prompt = torch.randint(0, 1000, (1, max(args.contexts)))
    for context in args.contexts:
        caches = {"float64": target.new_cache(context + STEPS + 1), "bfloat16": KVCache(target.num_layers, context + STEPS + 1)}
        for cache in caches.values():
            target.forward(prompt[:, :context], torch.arange(context)[None], cache, logits_to_keep=1)
        times, logits = {name: [] for name in caches}, {}
        for _ in range(args.rounds):
            for name, cache in caches.items():
                cache.truncate(context)
                started = time.perf_counter()
                for i in range(STEPS):
                    out = target.forward(torch.tensor([[5 + i]]), torch.tensor([[context + i]]), cache, logits_to_keep=1)
                times[name].append((time.perf_counter() - started) / STEPS * 1e3)
                logits[name] = out.logits
        medians = ", ".join(f"{name} cache {statistics.median(t):.1f} ms" for name, t in times.items())
        print(f"context {context}: {medians} a step; logits equal: {torch.equal(*logits.values())}", flush=True)


if __name__ == "__main__":
    main()
