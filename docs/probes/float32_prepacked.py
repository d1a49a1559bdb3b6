"""float32 plain decoding and verification on oneDNN-prepacked weights against the stock
`F.linear`, on the real target, in one process and interleaved (prompt by prompt, the order
swapped each time), so that a busy shared machine slows both alike: the A/B behind
`set_arithmetic` prepacking a float32 CPU target (docs/design.md). Per prompt of the chat
set (the first --per-category of each category, chat template, greedy): plain decoding's
tokens/s both ways and whether the outputs are equal; then the verification curve (chains
of n nodes after a 128-token context, the fastest of five) both ways.

    PYTHONPATH=. python docs/probes/float32_prepacked.py [--per-category 1] [--max-new-tokens 64]
"""

import argparse
import statistics
import time

import torch

from eagle3 import GenerationConfig, collect, decode
from eagle3.budget import verify_step
from eagle3.invariant import PrepackedLinear
from eagle3.prompts import first_per_category, prompt_ids, read_prompts
from eagle3.target import load_target

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--target", default="checkpoints/smollm2")
parser.add_argument("--prompts", default="assets/prompts/chat.jsonl")
parser.add_argument("--per-category", type=int, default=1)
parser.add_argument("--max-new-tokens", type=int, default=64)
args = parser.parse_args()

target = load_target(args.target, "cpu", "float32")
linears = [m for m in target.model.modules() if isinstance(m, PrepackedLinear)]
assert linears, "set_arithmetic left this float32 target's linear layers stock"


def use(kind: str) -> None:
    """Every linear layer of the target prepacked or stock (the class alone changes)."""
    for module in linears:
        module.__class__ = PrepackedLinear if kind == "prepacked" else torch.nn.Linear


def plain(ids: list[int]) -> tuple[list[int], float]:
    start = time.perf_counter()
    out = collect(decode(target, ids, None, GenerationConfig(args.max_new_tokens))).output_ids
    return out, len(out) / (time.perf_counter() - start)


records = first_per_category(read_prompts(args.prompts), args.per_category)
speeds = {"prepacked": [], "stock": []}
tokens = {"prepacked": 0, "stock": 0}
seconds = {"prepacked": 0.0, "stock": 0.0}
print(f"threads {torch.get_num_threads()}, CPU capability {torch.backends.cpu.get_cpu_capability()}")
for i, record in enumerate(records):
    ids = prompt_ids(record, target.tokenizer, chat=True)
    outputs = {}
    for kind in (("prepacked", "stock") if i % 2 == 0 else ("stock", "prepacked")):
        use(kind)
        outputs[kind], speed = plain(ids)
        speeds[kind].append(speed)
        tokens[kind] += len(outputs[kind])
        seconds[kind] += len(outputs[kind]) / speed
    print(f"{record.category:14} prompt {len(ids):4} tokens: prepacked {speeds['prepacked'][-1]:5.1f} tokens/s, "
          f"stock {speeds['stock'][-1]:5.1f} | outputs equal: {outputs['prepacked'] == outputs['stock']}")
for kind in speeds:
    print(f"{kind:9} plain decoding: {tokens[kind] / seconds[kind]:.2f} tokens/s over all prompts "
          f"(median of prompts {statistics.median(speeds[kind]):.2f})")

context = 128
with torch.inference_mode():
    cache = target.new_cache(context + 64)
    ids = torch.randint(0, 1000, (1, context + 32))
    target.forward(ids[:, :context], torch.arange(context)[None], cache)
    curve = {}
    for n in (1, 2, 4, 8, 16, 32):
        for kind in ("prepacked", "stock"):
            use(kind)
            run = verify_step(target, cache, ids[:, context:], context, n)
            run()
            times = []
            for _ in range(5):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            curve[kind, n] = min(times) * 1000
        print(f"verify {n:2} nodes: prepacked {curve['prepacked', n]:6.1f} ms ({curve['prepacked', n] / curve['prepacked', 1]:.2f} "
              f"steps), stock {curve['stock', n]:6.1f} ms ({curve['stock', n] / curve['stock', 1]:.2f} steps)")
use("prepacked")
