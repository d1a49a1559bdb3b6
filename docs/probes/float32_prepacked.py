"""float32 plain decoding and verification on oneDNN-prepacked weights against the stock
`F.linear`, on the real target, in one process and interleaved (prompt by prompt, the order
swapped each time), so that a busy shared machine slows both alike: the A/B behind
`set_arithmetic` prepacking a float32 CPU target (docs/design.md); with --elements N, the
products prepacked from FLOAT32_PREPACKED_ELEMENTS weights on against from N on. Per prompt of the chat
set (the first --per-category of each category, chat template, greedy): plain decoding's
tokens/s both ways and whether the outputs are equal; then the verification curve (chains
of n nodes after a 128-token context, the fastest of five) both ways.

    PYTHONPATH=. python docs/probes/float32_prepacked.py [--per-category 1] [--max-new-tokens 64] [--elements N]
"""

import argparse
import statistics
import time

import torch

from eagle3 import GenerationConfig, collect, decode
from eagle3 import invariant
from eagle3.budget import verify_step
from eagle3.invariant import PrepackedLinear
from eagle3.prompts import first_per_category, prompt_ids, read_prompts
from eagle3.target import load_target

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--target", default="checkpoints/smollm2")
parser.add_argument("--prompts", default="assets/prompts/chat.jsonl")
parser.add_argument("--per-category", type=int, default=1)
parser.add_argument("--max-new-tokens", type=int, default=64)
parser.add_argument("--elements", type=int, default=None,
                    help="compare with this size threshold for float32 prepacking instead of stock products")
args = parser.parse_args()
THRESHOLD = invariant.FLOAT32_PREPACKED_ELEMENTS
OTHER = "stock" if args.elements is None else f"from {args.elements}"

target = load_target(args.target, "cpu", "float32")
linears = [m for m in target.model.modules() if isinstance(m, PrepackedLinear)]
assert linears, "set_arithmetic left this float32 target's linear layers stock"


KINDS = ("prepacked", OTHER)


def use(kind: str) -> None:
    """The target's linear layers prepacked as shipped, or the other way: stock (the class
    alone changes), or prepacked from the other threshold on."""
    invariant.FLOAT32_PREPACKED_ELEMENTS = args.elements if kind == OTHER and args.elements else THRESHOLD
    for module in linears:
        module.__class__ = torch.nn.Linear if kind == "stock" else PrepackedLinear


def plain(ids: list[int]) -> tuple[list[int], float]:
    start = time.perf_counter()
    out = collect(decode(target, ids, None, GenerationConfig(args.max_new_tokens))).output_ids
    return out, len(out) / (time.perf_counter() - start)


records = first_per_category(read_prompts(args.prompts), args.per_category)
speeds = {kind: [] for kind in KINDS}
tokens = {kind: 0 for kind in KINDS}
seconds = {kind: 0.0 for kind in KINDS}
print(f"threads {torch.get_num_threads()}, CPU capability {torch.backends.cpu.get_cpu_capability()}")
for i, record in enumerate(records):
    ids = prompt_ids(record, target.tokenizer, chat=True)
    outputs = {}
    for kind in (KINDS if i % 2 == 0 else KINDS[::-1]):
        use(kind)
        outputs[kind], speed = plain(ids)
        speeds[kind].append(speed)
        tokens[kind] += len(outputs[kind])
        seconds[kind] += len(outputs[kind]) / speed
    print(f"{record.category:14} prompt {len(ids):4} tokens: prepacked {speeds['prepacked'][-1]:5.1f} tokens/s, "
          f"{OTHER} {speeds[OTHER][-1]:5.1f} | outputs equal: {outputs['prepacked'] == outputs[OTHER]}")
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
        for kind in KINDS:
            use(kind)
            run = verify_step(target, cache, ids[:, context:], context, n)
            run()
            times = []
            for _ in range(5):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            curve[kind, n] = min(times) * 1000
        print(f"verify {n:2} nodes: " + ", ".join(
            f"{kind} {curve[kind, n]:6.1f} ms ({curve[kind, n] / curve[kind, 1]:.2f} steps)" for kind in KINDS))
use("prepacked")
