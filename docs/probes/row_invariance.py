"""Up to how many rows a bfloat16 linear product gives each row the bits of that row alone,
per weight shape of the target, on this CPU: the question behind eagle3.invariant's row
limits. For every shape (stacked q/k/v and gate/up included), m = 1..--max-rows random
rows are multiplied at once and compared, bit for bit, with the same rows one at a time
("alone") and with each row multiplied beside a zero row ("padded", what the decoders do
where one-row products round their own way); prepacked (oneDNN's blocked layout, what the
decoders run) and stock `F.linear`, at 1 and 2 threads. Prints, per shape, the row counts
whose rows differ.

    PYTHONPATH=. python docs/probes/row_invariance.py [--target checkpoints/smollm2] [--max-rows 64]
"""

import argparse

import torch
import torch.nn.functional as F

from eagle3.invariant import onednn_packs
from eagle3.target import load_target

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--target", default="checkpoints/smollm2")
parser.add_argument("--max-rows", type=int, default=64)
parser.add_argument("--trials", type=int, default=3, help="random inputs per row count")
args = parser.parse_args()

target = load_target(args.target, "cpu", "float32")
layer = target.layers[0]
attn, mlp = layer.self_attn, layer.mlp
shapes = {
    "q/o 576x576": attn.q_proj.weight, "k/v 576->192": attn.k_proj.weight,
    "q/k/v stacked": torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]),
    "gate/up stacked": torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]),
    "down 1536->576": mlp.down_proj.weight, "lm_head": target.model.lm_head.weight,
}
print(torch.__config__.show().splitlines()[0], "| CPU capability:", torch.backends.cpu.get_cpu_capability())
generator = torch.Generator().manual_seed(0)
for threads in (1, 2):
    torch.set_num_threads(threads)
    for name, weight in shapes.items():
        weight = weight.detach().to(torch.bfloat16)
        products = {"stock": lambda rows, w=weight: F.linear(rows, w)}
        if onednn_packs(torch.bfloat16):
            packed = torch.ops.mkldnn._reorder_linear_weight(weight, 1)
            products["prepacked"] = lambda rows, p=packed: torch.ops.mkldnn._linear_pointwise(rows, p, None, "none", [], "")
        for kind, product in products.items():
            differ = {"alone": [], "padded": []}
            with torch.inference_mode():
                for m in range(1, args.max_rows + 1):
                    for _ in range(args.trials):
                        rows = torch.randn(m, weight.shape[1], generator=generator).to(torch.bfloat16)
                        together = product(rows)
                        references = {"alone": torch.cat([product(row) for row in rows.split(1)]),
                                      "padded": torch.cat([product(torch.cat([row, 0 * row]))[:1] for row in rows.split(1)])}
                        for reference, out in references.items():
                            if not torch.equal(together, out) and m not in differ[reference]:
                                differ[reference].append(m)
            print(f"{threads} thread(s) {name:>16} {kind:>9}: " + "; ".join(
                f"vs {reference}: " + (f"rows differ at m = {ms[:10]}{' ...' if len(ms) > 10 else ''}" if ms else
                                       f"every m <= {args.max_rows} bit-equal") for reference, ms in differ.items()),
                flush=True)
