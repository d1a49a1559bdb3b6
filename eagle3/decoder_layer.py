"""The target's decoder layer under eagle3.invariant's arithmetic, in fewer dispatches.

A one-token step of a small target is mostly fixed costs on a CPU: SmolLM2-135M runs 30
layers of about 200 small ops each, and every op and every Python call between them costs
microseconds whatever its size (docs/results.md). `lean_forward` computes, bit for bit,
what transformers' Llama, Qwen2, Qwen3 and Mistral decoder layers compute with
eagle3.invariant's attention and linear layers, with fewer of both:

- the packed products called directly, without the linear modules' calls: q/k/v as one
  stacked product and gate/up as another (eagle3.invariant.SharedInput), o and down alone;
- q and k rotated as one tensor (rotary embedding is elementwise, so each element gets
  the bits it gets alone);
- the norms' float32 temporaries reused in place.

`native_forward` runs the same steps in C++ (eagle3/csrc/decoder_layer.cpp, built once per
machine by eagle3.native): the same ATen ops in the same order, so the same bits, without the
Python between them, a large share of a small target's one-token step. It is two calls a
layer, so that whatever cache the model was given stores the keys and values in between.

`use_lean_layers` gives a model's decoder layers one of these forwards (an instance
attribute, so the module's call, its hooks and torch.compile still wrap it): the C++ one
where it was built and fits the layer (a SiLU-gated MLP), else the Python one. Where the
products are not prepacked (inside torch.compile, where a gradient is wanted, float16)
either runs the stock layer.
"""

from __future__ import annotations

import functools
import types

import torch
from transformers.activations import SiLUActivation

from eagle3.invariant import PrepackedLinear, RowLimits, SharedInput, invariant_attention
from eagle3.native import layer_ops


def rms_norm(norm: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """transformers' RMSNorm bits (Llama's, Qwen's, Mistral's): float32 statistics, the
    product rounded to the input dtype before the weight. hidden [..., D]."""
    x = hidden.to(torch.float32, copy=True)
    scale = x.square().mean(-1, keepdim=True).add_(norm.variance_epsilon).rsqrt_()
    return norm.weight * x.mul_(scale).to(hidden.dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """transformers' rotary embedding, x * cos + rotate_half(x) * sin; x [B, n, heads, D],
    cos / sin [B, n, 1, D]."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


def stock_where_unpacked(forward):
    """A lean forward that runs the layer's own forward where the products are not prepacked
    (inside torch.compile, where a gradient is wanted, float16) or no rotary embedding is given."""
    @functools.wraps(forward)
    def layer_forward(self, hidden_states: torch.Tensor, attention_mask=None, position_embeddings=None,
                      past_key_values=None, **kwargs) -> torch.Tensor:
        q_proj = self.self_attn.q_proj  # its group's stacked q/k/v weight is what is packed
        if position_embeddings is None or not q_proj.packs():
            return type(self).forward(self, hidden_states, attention_mask=attention_mask,
                                      position_embeddings=position_embeddings, past_key_values=past_key_values,
                                      **kwargs)
        return forward(self, hidden_states, attention_mask, position_embeddings, past_key_values)
    return layer_forward


@stock_where_unpacked
def lean_forward(self, hidden_states: torch.Tensor, attention_mask, position_embeddings,
                 past_key_values) -> torch.Tensor:
    """The decoder layer's forward: hidden_states [B, n, hidden] -> [B, n, hidden]."""
    attention, mlp = self.self_attn, self.mlp
    qkv, gate_up = attention.q_proj.shared_input, mlp.gate_proj.shared_input
    b, n, _ = hidden_states.shape
    d = attention.head_dim
    heads, kv_heads = qkv.widths[0] // d, qkv.widths[1] // d

    projected = qkv.product(rms_norm(self.input_layernorm, hidden_states))  # [B, n, (heads + 2 kv_heads) * D]
    qk = projected[..., :(heads + kv_heads) * d].view(b, n, heads + kv_heads, d)  # q's columns, then k's
    v = projected[..., (heads + kv_heads) * d:]
    if hasattr(attention, "q_norm"):  # Qwen3 normalises each head's query and key before rotating them
        qk = torch.cat([rms_norm(attention.q_norm, qk[:, :, :heads]), rms_norm(attention.k_norm, qk[:, :, heads:])], 2)
    cos, sin = position_embeddings  # [B, n, D]
    qk = rotate(qk, cos[:, :, None], sin[:, :, None])
    query, key = qk[:, :, :heads].transpose(1, 2), qk[:, :, heads:].transpose(1, 2)
    value = v.view(b, n, kv_heads, d).transpose(1, 2)
    if past_key_values is not None:
        key, value = past_key_values.update(key, value, attention.layer_idx)
    out, _ = invariant_attention(attention, query, key, value, attention_mask, attention.scaling)
    hidden = hidden_states + attention.o_proj.packed_product(out.view(b, n, heads * d))

    gate, up = gate_up.product(rms_norm(self.post_attention_layernorm, hidden)).split(gate_up.widths, -1)
    return hidden + mlp.down_proj.packed_product(mlp.act_fn(gate) * up)


@stock_where_unpacked
def native_forward(self, hidden_states: torch.Tensor, attention_mask, position_embeddings,
                   past_key_values) -> torch.Tensor:
    """lean_forward in C++: hidden_states [B, n, hidden] -> [B, n, hidden], the same bits."""
    attention, mlp = self.self_attn, self.mlp
    qkv, gate_up = attention.q_proj.shared_input, mlp.gate_proj.shared_input
    ops, d = layer_ops(), attention.head_dim
    q_norm, k_norm = getattr(attention, "q_norm", None), getattr(attention, "k_norm", None)
    query, key, value = ops.attention_inputs(
        hidden_states, self.input_layernorm.weight, self.input_layernorm.variance_epsilon, *qkv.weights.tensors(),
        *rows(attention.q_proj.row_limits), qkv.widths[0] // d, qkv.widths[1] // d, d,
        None if q_norm is None else q_norm.weight, None if k_norm is None else k_norm.weight,
        getattr(q_norm, "variance_epsilon", 0.0), getattr(k_norm, "variance_epsilon", 0.0), *position_embeddings)
    if past_key_values is not None:
        key, value = past_key_values.update(key, value, attention.layer_idx)
    norm = self.post_attention_layernorm
    return ops.layer_output(
        hidden_states, query, key, value, attention_mask, attention.scaling,
        *attention.o_proj.packed_weights().tensors(), *rows(attention.o_proj.row_limits),
        norm.weight, norm.variance_epsilon, *gate_up.weights.tensors(), *rows(mlp.gate_proj.row_limits),
        gate_up.widths[0], *mlp.down_proj.packed_weights().tensors(), *rows(mlp.down_proj.row_limits))


def rows(limits: RowLimits) -> tuple[int, int]:
    """Row limits as the C++ layer takes them: (min_rows, max_rows), 0 for no maximum."""
    return limits.min_rows, limits.max_rows or 0


def lean(layer: torch.nn.Module) -> bool:
    """Whether lean_forward computes this layer's bits: a Llama-family layer whose q/k/v and
    gate/up are grouped products (eagle3.invariant.share_inputs) and whose o and down are
    prepacked linear layers."""
    attention, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
    if attention is None or mlp is None:
        return False
    qkv, gate_up = getattr(attention.q_proj, "shared_input", None), getattr(mlp.gate_proj, "shared_input", None)
    return (isinstance(qkv, SharedInput) and qkv.members == [attention.q_proj, attention.k_proj, attention.v_proj]
            and isinstance(gate_up, SharedInput) and gate_up.members == [mlp.gate_proj, mlp.up_proj]
            and isinstance(attention.o_proj, PrepackedLinear) and isinstance(mlp.down_proj, PrepackedLinear)
            and hasattr(layer, "input_layernorm") and hasattr(layer, "post_attention_layernorm"))


def native_fits(layer: torch.nn.Module) -> bool:
    """Whether native_forward computes this lean layer's bits: its MLP is SiLU-gated (the C++
    layer's one activation) and the C++ layer was built."""
    return isinstance(layer.mlp.act_fn, (torch.nn.SiLU, SiLUActivation)) and layer_ops() is not None


def use_lean_layers(model: torch.nn.Module, enabled: bool = True, native: bool = True) -> None:
    """Give the model's decoder layers a lean forward where it computes their bits (enabled):
    native_forward where it fits (and native), else lean_forward; or their own forward back."""
    for layer in getattr(getattr(model, "model", None), "layers", ()):
        layer.__dict__.pop("forward", None)
        if enabled and lean(layer):
            forward = native_forward if native and native_fits(layer) else lean_forward
            layer.forward = types.MethodType(forward, layer)


def forward_kind(layer: torch.nn.Module) -> str:
    """Which forward a decoder layer runs: "C++" or "Python" (the lean ones), or "transformers"."""
    forward = getattr(layer.__dict__.get("forward"), "__func__", None)
    return {native_forward: "C++", lean_forward: "Python"}.get(forward, "transformers")
