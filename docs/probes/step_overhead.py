"""How much of a plain decoding step is not the weights' reading, and whether Python's module
calls are it: the real target's one-token step, the same step through a lean decoder layer
(transformers' Llama layer arithmetic op for op, called without the twelve submodule calls
and the attention-interface lookup of each layer), and the step of a model of the same depth
and layer code with tiny widths (64 hidden, vocabulary 1,000), whose weights cost nothing to
read, so its step is the fixed cost of the ops and the Python around them. Interleaved,
medians of --rounds rounds of 20 steps each, after a 300-token prefill; the lean layer's
logits must equal the stock layer's bit for bit. Then the ops a step dispatches (profiler).

    PYTHONPATH=. python docs/probes/step_overhead.py [--dtype float32] [--rounds 12]
"""

import argparse
import statistics
import time
import types

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from eagle3.target import Target, load_target, set_arithmetic

CONTEXT, STEPS = 300, 20


def rms_norm(norm, hidden: torch.Tensor) -> torch.Tensor:
    """LlamaRMSNorm's arithmetic, op for op."""
    dtype = hidden.dtype
    hidden = hidden.to(torch.float32)
    variance = hidden.pow(2).mean(-1, keepdim=True)
    hidden = hidden * torch.rsqrt(variance + norm.variance_epsilon)
    return norm.weight * hidden.to(dtype)


def lean_layer(self, hidden_states, attention_mask=None, position_ids=None, past_key_values=None, use_cache=False,
               position_embeddings=None, **kwargs):
    """LlamaDecoderLayer.forward with sdpa attention and a KV cache, submodules' forward called
    directly (a probe: one family, one attention)."""
    attention, mlp = self.self_attn, self.mlp
    x = rms_norm(self.input_layernorm, hidden_states)
    shape = (*x.shape[:-1], -1, attention.head_dim)
    query = attention.q_proj.forward(x).view(shape).transpose(1, 2)
    key = attention.k_proj.forward(x).view(shape).transpose(1, 2)
    value = attention.v_proj.forward(x).view(shape).transpose(1, 2)
    query, key = apply_rotary_pos_emb(query, key, *position_embeddings)
    key, value = past_key_values.update(key, value, attention.layer_idx)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=attention.scaling,
                                         is_causal=attention_mask is None and query.shape[2] > 1, enable_gqa=True)
    hidden = hidden_states + attention.o_proj.forward(out.transpose(1, 2).reshape(*x.shape[:-1], -1))
    x = rms_norm(self.post_attention_layernorm, hidden)
    return hidden + mlp.down_proj.forward(F.silu(mlp.gate_proj.forward(x)) * mlp.up_proj.forward(x))


def tiny_twin(target: Target) -> Target:
    """A random model of the target's depth and layer code, 64 wide."""
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=target.num_layers,
                         num_attention_heads=8, num_key_value_heads=2, head_dim=8, vocab_size=1000,
                         tie_word_embeddings=True, max_position_embeddings=4096)
    return Target(set_arithmetic(LlamaForCausalLM(config).to(target.dtype).eval()))


def stepper(target: Target):
    """A function running STEPS one-token steps after the prefill, returning their logits."""
    cache = target.new_cache(CONTEXT + STEPS + 1)
    target.forward(torch.randint(0, 1000, (1, CONTEXT)), torch.arange(CONTEXT)[None], cache, logits_to_keep=1)

    def run() -> list[torch.Tensor]:
        cache.truncate(CONTEXT)
        return [target.forward(torch.tensor([[5]]), torch.tensor([[CONTEXT + i]]), cache, logits_to_keep=1).logits
                for i in range(STEPS)]
    return run


def use_lean(target: Target, lean: bool) -> None:
    for layer in target.layers:
        if lean:
            layer.forward = types.MethodType(lean_layer, layer)
        else:
            layer.__dict__.pop("forward", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="checkpoints/smollm2")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    target = load_target(args.target, "cpu", args.dtype, attention="sdpa")
    tiny = tiny_twin(target)
    real_run, tiny_run = stepper(target), stepper(tiny)
    use_lean(target, True)
    lean_logits = real_run()
    use_lean(target, False)
    print("lean layer's logits equal the stock layer's:", all(map(torch.equal, lean_logits, real_run())))

    def stock():
        use_lean(target, False)
        real_run()

    def lean():
        use_lean(target, True)
        real_run()

    runs = {"stock layer": stock, "lean layer": lean, "tiny widths": tiny_run}
    times = {name: [] for name in runs}
    for i in range(args.rounds):
        for name in (list(runs) if i % 2 == 0 else list(runs)[::-1]):
            start = time.perf_counter()
            runs[name]()
            times[name].append((time.perf_counter() - start) / STEPS * 1e3)
    print(f"threads {torch.get_num_threads()}, CPU capability {torch.backends.cpu.get_cpu_capability()}, {args.dtype}")
    for name, values in times.items():
        print(f"{name:12} step: median {statistics.median(values):5.1f} ms (fastest round {min(values):5.1f})")
    use_lean(target, False)
    for name, run in (("real target", real_run), ("tiny widths", tiny_run)):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run()
        calls = sum(event.count for event in prof.key_averages())
        print(f"{name}: {calls / STEPS:.0f} op calls a step (views included)")


if __name__ == "__main__":
    main()
