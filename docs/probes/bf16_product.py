"""The C++ bfloat16 product (eagle3/csrc/product.cpp) against oneDNN's prepacked one (where
oneDNN packs bfloat16: not on an AVX2-only CPU) and against the C++ float32 product on the same
numbers, on random weights of SmolLM2's shapes, for --rows rows: microseconds a call (medians
of repeated calls, so the small weights sit in cache and the lm_head's do not), and whether
every row of the C++ product has the bits it has alone. Then the C++ products of a whole
step, 30 layers' own weights and the lm_head, as a decoding step reads them: from memory, in
bfloat16 and in float32.

    PYTHONPATH=. python docs/probes/bf16_product.py [--threads 2] [--rows 1,4,16]
"""

import argparse
import statistics
import time

import torch

from eagle3.invariant import onednn_packs
from eagle3.native import layer_ops
from eagle3.transfer import call_seconds

CPU = torch.device("cpu")
SHAPES = {"q/k/v": (960, 576), "o": (576, 576), "gate/up": (3072, 576), "down": (576, 1536), "lm_head": (49152, 576)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", default="1,4,16", help="row counts, comma-separated")
    args = parser.parse_args()
    row_counts = [int(m) for m in args.rows.split(",")]
    torch.set_num_threads(args.threads)
    ops = layer_ops()
    if ops is None:
        raise SystemExit("the C++ build is needed (eagle3.native)")
    generator = torch.Generator().manual_seed(0)
    print(f"{'weight':<22}{'rows':>5}{'C++ us':>10}{'oneDNN us':>11}{'float32 us':>12}  rows alone")
    for name, (outputs, inputs) in SHAPES.items():
        weight = (torch.randn(outputs, inputs, generator=generator) * 0.05).to(torch.bfloat16)
        packed, packed_float = ops.pack(weight), ops.pack(weight.float())
        onednn = torch.ops.mkldnn._reorder_linear_weight(weight, 1) if onednn_packs(torch.bfloat16) else None
        calls = 20 if outputs * inputs > 10_000_000 else 300
        for m in row_counts:
            rows = torch.randn(m, inputs, generator=generator).to(torch.bfloat16)
            together = ops.product(rows, packed, None)
            alone = torch.cat([ops.product(row[None], packed, None) for row in rows])
            rows_float = rows.float()  # widened outside the timing, as a float32 target's rows come
            cpp = call_seconds(lambda: ops.product(rows, packed, None), CPU, calls) * 1e6
            mkldnn = "-" if onednn is None else "{:.1f}".format(call_seconds(
                lambda: torch.ops.mkldnn._linear_pointwise(rows, onednn, None, "none", [], ""), CPU, calls) * 1e6)
            float32 = call_seconds(lambda: ops.product(rows_float, packed_float, None), CPU, calls) * 1e6
            print(f"{name + f' {outputs} x {inputs}':<22}{m:>5}{cpp:>10.1f}{mkldnn:>11}{float32:>12.1f}  "
                  f"{torch.equal(together, alone)}")
    for dtype in (torch.bfloat16, torch.float32):
        step_from_memory(ops, generator, row_counts, dtype)


def step_from_memory(ops, generator: torch.Generator, row_counts: list[int], dtype: torch.dtype,
                     layers: int = 30) -> None:
    """A step's products in dtype on `layers` layers of distinct weights (more bytes than the
    caches hold), then the lm_head: milliseconds and GB/s of weights read, medians of 7 steps."""
    shapes = [shape for name, shape in SHAPES.items() if name != "lm_head"]
    packed = [ops.pack((torch.randn(*shape, generator=generator) * 0.05).to(dtype)) for _ in range(layers)
              for shape in shapes]
    lm_head = ops.pack((torch.randn(*SHAPES["lm_head"], generator=generator) * 0.05).to(dtype))
    size = packed[0].element_size()
    layer_bytes = sum(w.numel() * size for w in packed)
    print(f"\na step from memory in {str(dtype).removeprefix('torch.')}: {layers} layers ({layer_bytes / 1e6:.0f} MB), "
          "then the lm_head")
    for m in row_counts:
        inputs = {inputs: torch.randn(m, inputs, generator=generator).to(dtype) for _, inputs in shapes}
        times = []
        for _ in range(7):
            start = time.perf_counter()
            for weight in packed:
                ops.product(inputs[weight.shape[1] * weight.shape[2]], weight, None)
            middle = time.perf_counter()
            ops.product(inputs[576], lm_head, None)
            times.append((middle - start, time.perf_counter() - middle))
        layer_s, head_s = (statistics.median(t[i] for t in times) for i in (0, 1))
        print(f"{m:>3} rows: layers {layer_s * 1e3:6.2f} ms ({layer_bytes / layer_s / 1e9:5.1f} GB/s), "
              f"lm_head {head_s * 1e3:5.2f} ms ({lm_head.numel() * size / head_s / 1e9:5.1f} GB/s)")


if __name__ == "__main__":
    main()
