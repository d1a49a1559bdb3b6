"""What a float32 linear product costs by rows on this CPU: stock `F.linear` (MKL's sgemm),
MKL's packed weight (`torch.ops.mkl._mkl_linear`, the layout torch's freezing passes use),
oneDNN's prepacked weight (`torch.ops.mkldnn._linear_pointwise`) and the C++ product on its
packed weight (eagle3/csrc/product.cpp, where eagle3.native builds it): the question behind a tree's price in float32, where `auto` runs the
target on a CPU without exact bfloat16. Random weights of SmolLM2's shapes (q/k/v and
gate/up also stacked, as SharedInput multiplies them) and of a small model's, where a call's
fixed cost shows; each product on the next of enough copies to overflow the caches
(decoding reads its weights from memory), the fastest of five passes. Also says whether
each row of an m-row product keeps the bits of the one-row product.

    PYTHONPATH=. python docs/probes/float32_products.py [--rows 1,2,4,16] [--shapes lm_head,down]
"""

import argparse
import time

import torch
import torch.nn.functional as F

from eagle3.native import layer_ops

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--rows", default="1,2,4,16", help="row counts, comma-separated")
parser.add_argument("--shapes", default=None, help="the first words of the shapes to run, comma-separated (default: all)")
parser.add_argument("--cold-mib", type=int, default=256, help="the copies of each weight add up to at least this")
args = parser.parse_args()
ROWS = [int(m) for m in args.rows.split(",")]
SHAPES = {"a small model's (64 -> 64)": (64, 64), "q / o (576 -> 576)": (576, 576),
          "q/k/v stacked (576 -> 960)": (576, 960), "gate or up (576 -> 1536)": (576, 1536), "gate/up stacked (576 -> 3072)": (576, 3072),
          "down (1536 -> 576)": (1536, 576), "lm_head (576 -> 49152)": (576, 49152)}


def microseconds(call, copies: list) -> float:
    """The fastest of five passes of call(copy) over every copy, per call."""
    for copy in copies[:2]:
        call(copy)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for copy in copies:
            call(copy)
        best = min(best, (time.perf_counter() - start) / len(copies))
    return best * 1e6


def keeps_bits(product, x) -> bool:
    return torch.equal(product(x), torch.cat([product(row) for row in x.split(1)]))


torch.manual_seed(0)
OPS = layer_ops()
print(f"threads {torch.get_num_threads()}, CPU capability {torch.backends.cpu.get_cpu_capability()}")
for name, (k, n) in SHAPES.items():
    if args.shapes and not any(name.startswith(prefix) for prefix in args.shapes.split(",")):
        continue
    weights = [torch.randn(n, k) * 0.02 for _ in range(max(2, -(-args.cold_mib * 2**20 // (n * k * 4))))]
    mkl = [(torch.ops.mkl._mkl_reorder_linear_weight(w, 1), w) for w in weights]
    onednn = [torch.ops.mkldnn._reorder_linear_weight(w, 1) for w in weights]
    own = [OPS.pack(w) for w in weights] if OPS else []
    print(name)
    for m in ROWS:
        x = torch.randn(m, k)
        products = {"stock": lambda w, x=x: F.linear(x, w),
                    "MKL packed": lambda p, x=x: torch.ops.mkl._mkl_linear(x, p[0], p[1], None, 1),
                    "oneDNN prepacked": lambda p, x=x: torch.ops.mkldnn._linear_pointwise(x, p, None, "none", [], ""),
                    "C++": lambda p, x=x: OPS.product(x, p, None)}
        times = {kind: microseconds(product, copies)
                 for (kind, product), copies in zip(products.items(), (weights, mkl, onednn, own)) if copies}
        bits = {"stock": keeps_bits(lambda r: F.linear(r, weights[0]), x),
                "oneDNN": keeps_bits(lambda r: torch.ops.mkldnn._linear_pointwise(r, onednn[0], None, "none", [], ""), x)}
        if OPS:
            bits["C++"] = keeps_bits(lambda r: OPS.product(r, own[0], None), x)
        print(f"  {m:>3} rows: " + ", ".join(f"{kind} {us:8.1f} us" for kind, us in times.items())
              + " | rows keep their one-row bits: " + ", ".join(f"{kind} {kept}" for kind, kept in bits.items()))
