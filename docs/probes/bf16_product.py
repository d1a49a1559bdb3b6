"""The C++ bfloat16 product (eagle3/csrc/product.cpp) against oneDNN's prepacked one, on
random weights of SmolLM2's shapes, for 1, 4 and 16 rows: microseconds a call (medians of
repeated calls, so the small weights sit in cache and the lm_head's do not), and whether
every row of the C++ product has the bits it has alone.

    PYTHONPATH=. python docs/probes/bf16_product.py [--threads 2]
"""

import argparse

import torch

from eagle3.native import layer_ops
from eagle3.transfer import call_seconds

CPU = torch.device("cpu")
SHAPES = {"q/k/v": (960, 576), "gate/up": (3072, 576), "down": (576, 1536), "lm_head": (49152, 576)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ops = layer_ops()
    if ops is None:
        raise SystemExit("the C++ build is needed (eagle3.native)")
    generator = torch.Generator().manual_seed(0)
    print(f"{'weight':<22}{'rows':>5}{'C++ us':>10}{'oneDNN us':>11}  rows alone")
    for name, (outputs, inputs) in SHAPES.items():
        weight = (torch.randn(outputs, inputs, generator=generator) * 0.05).to(torch.bfloat16)
        packed, onednn = ops.pack_bf16(weight), torch.ops.mkldnn._reorder_linear_weight(weight, 1)
        calls = 20 if outputs * inputs > 10_000_000 else 300
        for m in (1, 4, 16):
            rows = torch.randn(m, inputs, generator=generator).to(torch.bfloat16)
            together = ops.bf16_product(rows, packed, None)
            alone = torch.cat([ops.bf16_product(row[None], packed, None) for row in rows])
            cpp = call_seconds(lambda: ops.bf16_product(rows, packed, None), CPU, calls) * 1e6
            mkldnn = call_seconds(lambda: torch.ops.mkldnn._linear_pointwise(rows, onednn, None, "none", [], ""), CPU,
                                  calls) * 1e6
            print(f"{name + f' {outputs} x {inputs}':<22}{m:>5}{cpp:>10.1f}{mkldnn:>11.1f}  {torch.equal(together, alone)}")


if __name__ == "__main__":
    main()
