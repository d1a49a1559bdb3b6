"""Batch-invariant attention: what makes greedy speculative decoding token-exact in bfloat16
on a CPU.

Verifying a tree runs n tokens through the target in one forward; plain decoding runs them
one by one. Lossless greedy decoding needs each tree node's logits to equal, bit for bit,
those of the one-token step that would have computed them. In float32 the two agree to
about 1e-5, which never flips an argmax in practice. In bfloat16 every layer rounds its
output to 8 bits of mantissa, and a difference in the last bit grows into logit differences
of 0.5 over 30 layers, enough to flip an argmax now and then.

Measured on oneDNN with AMX: bfloat16 linear layers already give each row the same bits
whatever the number of rows. Attention does not: its sums over keys run in blocks
and vector lanes, so their rounding depends on the number of queries, on how far the key
axis runs past a query under the mask, and, in a tree, on where a node's ancestors sit
among its siblings. This attention does the arithmetic in float64: bfloat16 products are
exact there, sums of them in any order agree to about 1e-16, and the rounding back to
bfloat16 (steps of about 4e-3) erases that, so the order of the sums stops mattering. Keys
and values are stored in float64 by the cache (`cache_dtype`), converted once when written;
on the 135M default target this costs no more than transformers' `sdpa` (README).
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import eager_mask

NAME = "eagle3_invariant"


def invariant_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """query [B, H, q, D], key / value [B, H_kv, L, D], attention_mask additive [B, 1, q, L]
    or None. Returns ([B, q, H, D], None), as transformers' attention functions do."""
    b, heads, q, d = query.shape
    dtype = query.dtype
    kv_heads, length = key.shape[1], key.shape[2]
    # Grouped-query attention without copies: the query heads of one key head become rows.
    query = query.reshape(b, kv_heads, heads // kv_heads * q, d).double()
    scores = torch.matmul(query, key.double().transpose(2, 3)) * scaling  # [B, H_kv, groups * q, L]
    if attention_mask is not None:
        scores = (scores.view(b, heads, q, length) + attention_mask[..., :length]).view_as(scores)
    weights = torch.softmax(scores, dim=-1)
    out = torch.matmul(weights, value.double()).view(b, heads, q, d)
    return out.to(dtype).transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, invariant_attention)
AttentionMaskInterface.register(NAME, eager_mask)


def cache_dtype(model) -> torch.dtype | None:
    """float64 keys and values for a model with this attention (converted once, when
    written, instead of the whole cache at every layer of every step); else None."""
    return torch.float64 if model.config._attn_implementation == NAME else None


def wants_invariant_attention(device: torch.device, dtype: torch.dtype) -> bool:
    """CPU targets in 16-bit floats. CUDA kernels are another matter (see the README)."""
    return device.type == "cpu" and dtype in (torch.bfloat16, torch.float16)
