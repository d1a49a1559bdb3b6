"""Where a plain decoding step's wall time goes on the real target: the whole forward, the 30
decoder layers (forward hooks), and the ops themselves (torch.profiler self time), after a
300-token prefill; then the ops by self time.

    PYTHONPATH=. python docs/probes/plain_step_profile.py [--steps 40] [--dtype float32] [--threads N]

(--threads: torch's intra-op threads, default torch's own; OpenMP's OMP_WAIT_POLICY, which
says whether idle threads spin or sleep between the products, is read from the environment.)

The wall time less the ops' self time is Python between the ops (the profiler adds a little
of its own).
"""

import argparse
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from eagle3.target import load_target

CONTEXT = 300


def step(target, cache) -> None:
    position = cache.length
    target.forward(torch.tensor([[5]]), torch.tensor([[position]]), cache, logits_to_keep=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="checkpoints/smollm2")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--dtype", default="bfloat16", help="bfloat16 (with eagle3.invariant) or float32")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    target = load_target(args.target, "cpu", args.dtype)
    cache = target.new_cache(CONTEXT + 2 * args.steps + 1)
    target.forward(torch.randint(0, 1000, (1, CONTEXT)), torch.arange(CONTEXT)[None], cache, logits_to_keep=1)

    layer_seconds: list[float] = []
    for layer in target.layers:
        layer.register_forward_pre_hook(lambda module, a, k: setattr(module, "_started", time.perf_counter()),
                                        with_kwargs=True)
        layer.register_forward_hook(lambda module, a, k, o: layer_seconds.append(time.perf_counter() - module._started),
                                    with_kwargs=True)
    walls = []
    for _ in range(args.steps):
        started = time.perf_counter()
        step(target, cache)
        walls.append(time.perf_counter() - started)
    layers_ms = sum(layer_seconds) / args.steps * 1e3
    print(f"{torch.get_num_threads()} threads: step wall (median) {statistics.median(walls) * 1e3:.1f} ms, "
          f"in the decoder layers {layers_ms:.1f} ms")

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step(target, cache)
    averages = prof.key_averages()
    ops_ms = sum(e.self_cpu_time_total for e in averages) / args.steps / 1e3
    print(f"ops' self time {ops_ms:.1f} ms a step (under the profiler)")
    print(averages.table(sort_by="self_cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()
