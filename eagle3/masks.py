"""Attention masks: additive (0 where attention is allowed, the dtype's minimum elsewhere),
or bool keep masks (True where it is allowed), which sdpa and the C++ attention
(eagle3/csrc/attention.cpp) read as they are."""

from __future__ import annotations

import torch


def layer_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[q, kv] or [B, q, kv] bool -> [1 or B, 1, q, kv], the mask a layer reads in dtype: the
    keep mask itself where dtype is bool, else additive."""
    if dtype == torch.bool:
        return allowed[None, None] if allowed.dim() == 2 else allowed[:, None]
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None] if allowed.dim() == 2 else mask[:, None]


def ragged_allowed(lengths: torch.Tensor, written: int, own: torch.Tensor) -> torch.Tensor:
    """[B, q, written + q] bool: each row's valid prefix [0, L_b) of the `written` cached
    positions, then `own` [B, q, q] among the q new positions written after them (a tree's
    ancestors: each node sees its ancestors and itself)."""
    batch, q = own.shape[0], own.shape[1]
    prefix = torch.arange(written, device=own.device)[None, None, :] < lengths[:, None, None]
    return torch.cat([prefix.expand(batch, q, written), own], dim=2)


def in_window(query_positions: torch.Tensor, key_positions: torch.Tensor, window: int) -> torch.Tensor:
    """[B, q] and [B, kv] positions -> [B, q, kv] bool: the key lies within the last
    `window` positions of the query."""
    return key_positions[:, None, :] > query_positions[:, :, None] - window
