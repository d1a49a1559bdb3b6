"""What one step of each kind costs on this device, for a target and head of a real model's shape.

    python -m eagle3.costs --shape llama-3.1-8b --device cuda --json runs/costs.json
    python -m eagle3.costs --shape tiny --device cpu        # the same measurement, small
    python -m eagle3.costs --shape smollm2-135m --device cpu  # the app's default target

Random weights (the timings do not depend on them), in --dtype (auto: bfloat16 on CUDA and
CPUs with exact bfloat16). After a prefill of --context tokens it times, as medians of --repeats: one
plain decoding step, one draft level (top_k nodes through the head, from the difference
between drafting 1 and `depth` levels), and the verification of 1 to 64 tokens, in
milliseconds and in one-node rounds (the curve eagle3.budget prices trees by, which it
measures itself at start, by the fastest of five). Plain decoding is memory bound: its
ceiling is the memory bandwidth over the bytes of the target's weights. The bandwidth is
the device's peak for the known GPUs (or --bandwidth-gb-s), else the read bandwidth torch
measures here (a sum over a tensor far larger than the caches, the best of five), over the
bytes of weights a step reads (weight_bytes_read); the report gives plain decoding's share
of that ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from eagle3.budget import MEASURED_NODES, verify_step
from eagle3.head import Eagle3Config, Eagle3Head
from eagle3.invariant import products_kernel
from eagle3.target import Target, device_name, resolve_device, resolve_dtype, set_arithmetic
from eagle3.transfer import call_seconds
from eagle3.tree import TreeConfig, draft_tree

SHAPES = {  # target config; the head is one decoder layer of the same width
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0,
                         draft_vocab_size=32000),
    "smollm2-135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0,
                         tie_word_embeddings=True, draft_vocab_size=6144),
    "tiny": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=1000, max_position_embeddings=2048, draft_vocab_size=500),
}
BANDWIDTH_GB_S = {"H200": 4800, "H100": 3350, "A100": 2039, "L40S": 864, "A10": 600, "L4": 300}  # HBM / GDDR peak


def random_pair(shape: str, device: torch.device, dtype: torch.dtype,
                attention: str = "auto") -> tuple[Target, Eagle3Head]:
    fields = dict(SHAPES[shape])
    draft_vocab_size = fields.pop("draft_vocab_size")
    config = LlamaConfig(**fields)
    with torch.device("meta"):
        model = LlamaForCausalLM(config).to(dtype)  # cast while it holds no memory: an 8B target is 16 GB, not 32
    model = model.to_empty(device=device)
    model.model.rotary_emb = LlamaRotaryEmbedding(config).to(device)  # its buffers are computed, not loaded
    target = Target(set_arithmetic(model.eval(), attention))
    head = Eagle3Head(Eagle3Config.for_target(config, draft_vocab_size), target.input_embeddings)
    head = head.to(device=device, dtype=dtype).eval()
    generator = torch.Generator(device).manual_seed(0)
    with torch.no_grad():
        for module in (model, head):
            for name, p in module.named_parameters():
                if "norm" in name:
                    p.fill_(1.0)
                else:
                    p.normal_(0.0, 0.02, generator=generator)
    return target, head


def median_ms(fn, device: torch.device, repeats: int) -> float:
    return round(call_seconds(fn, device, repeats) * 1000, 3)


@torch.inference_mode()
def measure(target: Target, head: Eagle3Head, context: int, repeats: int, top_k: int = 8, depth: int = 4) -> dict:
    device = target.device
    cache = target.new_cache(context + 128)
    ids = torch.randint(0, target.vocab_size, (1, max(context, 64)), device=device)
    out = target.forward(ids[:, :context], torch.arange(context, device=device)[None], cache, logits_to_keep=1,
                         capture=True)

    draft_cache = head.draft_cache(context + repeats * 4 + top_k * depth + 16)
    draft_tree(head, draft_cache, out.features[0], ids[0, :context].tolist(), TreeConfig(1, top_k, top_k + 1), 1)  # the prompt
    feature, token = out.features[0, -1:], ids[0, context - 1 : context].tolist()

    def draft(levels: int):
        return lambda: draft_tree(head, draft_cache, feature, token, TreeConfig(depth, top_k, 1 + top_k * depth), levels)

    def plain_step():
        target.forward(ids[:, :1], torch.tensor([[context]], device=device), cache, logits_to_keep=1)
        cache.truncate(context)

    plain = median_ms(plain_step, device, repeats)
    one, deep = median_ms(draft(1), device, repeats), median_ms(draft(depth), device, repeats)
    result = {"plain_step_ms": plain, "draft_level_ms": round((deep - one) / (depth - 1), 3), "draft_first_level_ms": one,
              "draft_top_k": top_k}
    # The verification curve NodeBudget prices trees by (root included; 1 node: a plain round).
    result["verify_ms"] = {n: median_ms(verify_step(target, cache, ids, context, n), device, repeats)
                           for n in MEASURED_NODES}
    result["verify_in_steps"] = {n: round(ms / result["verify_ms"][1], 3) for n, ms in result["verify_ms"].items()}
    result.update(plain_tokens_per_s=round(1000 / plain, 1), weights_read_gb=round(weight_bytes_read(target.model) / 1e9, 3))
    return result


def weight_bytes_read(model: torch.nn.Module) -> int:
    """The bytes of weights one decoding step reads: every parameter once, except the input
    embedding table, of which a step reads one row, unless the lm_head shares it (tied)."""
    embedding = model.get_input_embeddings().weight
    tied = embedding is model.get_output_embeddings().weight
    return sum(p.numel() * p.element_size() for p in model.parameters() if tied or p is not embedding)


def read_bandwidth_gb_s(device: torch.device, mib: int = 512, repeats: int = 5) -> float:
    """The memory read bandwidth torch reaches on this device: the best of `repeats` sums over
    a float32 tensor of `mib` MiB (bytes read / seconds, GB/s). Float32, because a bfloat16
    sum is held back by its conversions on some CPUs rather than by memory."""
    data = torch.ones(mib * 2**20 // 4, dtype=torch.float32, device=device)
    # (call_seconds' warm-up call touches the pages and chooses the kernel)
    return data.numel() * data.element_size() / call_seconds(data.sum, device, repeats, min) / 1e9


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eagle3.costs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="llama-3.1-8b", choices=sorted(SHAPES))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto", help="auto: bfloat16 on CUDA and CPUs with exact bfloat16 (AVX2 and FMA, AVX-512 BF16 or AMX, with the C++ build), else float32")
    parser.add_argument("--attention", default="auto", help="the target's attention (see eagle3.options)")
    parser.add_argument("--context", type=int, default=512, help="tokens in the cache before each timed step")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--bandwidth-gb-s", type=float, default=None,
                        help="memory bandwidth (default: the peak of known GPUs, else measured here)")
    parser.add_argument("--bandwidth-mib", type=int, default=512, help="size of the tensor the bandwidth is read from")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
        dtype = resolve_dtype(args.dtype, device)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    target, head = random_pair(args.shape, device, dtype, args.attention)
    name = device_name(device)
    report = {"shape": args.shape, "device": name, "dtype": str(dtype).removeprefix("torch."),
              "attention": target.config._attn_implementation,
              "products": products_kernel(target.layers[0].mlp.down_proj.weight), "context": args.context,
              **measure(target, head, args.context, args.repeats)}
    report["measured_read_gb_s"] = round(read_bandwidth_gb_s(device, args.bandwidth_mib), 1)
    bandwidth = (args.bandwidth_gb_s or next((v for k, v in BANDWIDTH_GB_S.items() if device.type == "cuda" and k in name), None)
                 or report["measured_read_gb_s"])
    report["bandwidth_gb_s"] = bandwidth
    report["bandwidth_bound_tokens_per_s"] = round(bandwidth / report["weights_read_gb"], 1)
    # Plain decoding's share of the ceiling: one step reads every weight once.
    report["plain_share_of_bound"] = round(report["plain_tokens_per_s"] / report["bandwidth_bound_tokens_per_s"], 3)
    print(json.dumps(report, indent=1))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
