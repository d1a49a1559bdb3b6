"""What a float32 linear product costs by rows on this CPU, stock `F.linear` against MKL's
packed weight (`torch.ops.mkl._mkl_linear`, the layout torch's freezing passes use): the
question behind a tree's price in float32, where `auto` runs the target on a CPU without
exact bfloat16. Random weights of SmolLM2's shapes, warm caches, the fastest of five runs;
also says whether each row of an m-row product keeps the bits of the one-row product.

    python docs/probes/float32_products.py [--rows 1,2,4,16]
"""

import argparse
import time

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--rows", default="1,2,4,16", help="row counts, comma-separated")
args = parser.parse_args()
ROWS = [int(m) for m in args.rows.split(",")]
SHAPES = {"q / o (576 -> 576)": (576, 576), "gate or up (576 -> 1536)": (576, 1536),
          "down (1536 -> 576)": (1536, 576), "lm_head (576 -> 49152)": (576, 49152)}


def microseconds(call, repeats: int) -> float:
    for _ in range(3):
        call()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            call()
        best = min(best, (time.perf_counter() - start) / repeats)
    return best * 1e6


torch.manual_seed(0)
print(f"threads {torch.get_num_threads()}, CPU capability {torch.backends.cpu.get_cpu_capability()}")
for name, (k, n) in SHAPES.items():
    weight = torch.randn(n, k) * 0.02
    packed = torch.ops.mkl._mkl_reorder_linear_weight(weight, max(ROWS))
    repeats = 20 if n > 10_000 else 200
    print(name)
    for m in ROWS:
        x = torch.randn(m, k)
        stock = microseconds(lambda: F.linear(x, weight), repeats)
        mkl = microseconds(lambda: torch.ops.mkl._mkl_linear(x, packed, weight, None, m), repeats)
        rows_alone = torch.cat([torch.ops.mkl._mkl_linear(x[i:i + 1], packed, weight, None, 1) for i in range(m)])
        stock_alone = torch.cat([F.linear(x[i:i + 1], weight) for i in range(m)])
        print(f"  {m:>3} rows: stock {stock:9.1f} us, packed {mkl:9.1f} us | rows keep their one-row bits: "
              f"stock {torch.equal(F.linear(x, weight), stock_alone)}, "
              f"packed {torch.equal(torch.ops.mkl._mkl_linear(x, packed, weight, None, m), rows_alone)}")
