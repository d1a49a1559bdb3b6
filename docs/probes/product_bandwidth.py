"""How fast the plain step's matrix products read their weights: each SmolLM2-135M product
of a one-token bfloat16 step (the stacked q/k/v, o, the stacked gate/up, down on its two
padded rows where AVX-512 BF16 pads them, lm_head) on cold weights (cycling through one
copy per layer, as a step does), through the decoders' kernel (oneDNN on a prepacked
weight), transformers' stock `F.linear`, and aten's own `torch.mv`; beside the read
bandwidth the ceiling of `eagle3.costs` stands for (its `read_bandwidth_gb_s`: the best of 5
float32 sums over 512 MiB).

    PYTHONPATH=. python docs/probes/product_bandwidth.py [--threads 2]
"""

import argparse
import time

import torch

from eagle3.costs import read_bandwidth_gb_s

LAYERS = 30
SHAPES = {"q/k/v": (960, 576), "o": (576, 576), "gate/up": (3072, 576), "down": (576, 1536), "lm_head": (49152, 576)}


def seconds_per_call(product, weights, repeats: int = 10) -> float:
    for weight in weights:  # warm the code, not the weights: each is read once per pass
        product(weight)
    started = time.perf_counter()
    for _ in range(repeats):
        for weight in weights:
            product(weight)
    return (time.perf_counter() - started) / repeats / len(weights)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{args.threads} threads; GB/s of weights read (microseconds a product)")
    for name, (outputs, inputs) in SHAPES.items():
        weights = [torch.randn(outputs, inputs).to(torch.bfloat16) for _ in range(LAYERS if name != "lm_head" else 2)]
        packed = [torch.ops.mkldnn._reorder_linear_weight(w, 1) for w in weights]
        rows = torch.randn(2 if inputs > 1024 else 1, inputs).to(torch.bfloat16)
        kernels = {
            "prepacked oneDNN": (lambda p: torch.ops.mkldnn._linear_pointwise(rows, p, None, "none", [], ""), packed),
            "F.linear": (lambda w: torch.nn.functional.linear(rows, w), weights),
            "torch.mv": (lambda w: torch.mv(w, rows[0]), weights),
        }
        gigabytes = outputs * inputs * 2 / 1e9
        seconds = {kernel: seconds_per_call(product, ws) for kernel, (product, ws) in kernels.items()}
        cells = [f"{kernel} {gigabytes / s:5.1f} ({1e6 * s:7.1f})" for kernel, s in seconds.items()]
        print(f"{name:8s} {gigabytes * 1e3:6.2f} MB, {len(rows)} row(s): " + "; ".join(cells))
    print(f"read bandwidth (eagle3.costs): {read_bandwidth_gb_s(torch.device('cpu')):.1f} GB/s")


if __name__ == "__main__":
    main()
