"""Additive attention masks (0 where attention is allowed, the dtype's minimum elsewhere)."""

from __future__ import annotations

import torch


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[q, kv] or [B, q, kv] bool -> [1 or B, 1, q, kv] additive mask in dtype."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None] if allowed.dim() == 2 else mask[:, None]


def tree_allowed(prefix_len: int, ancestors: torch.Tensor) -> torch.Tensor:
    """[n, prefix_len + n] bool: tree nodes see the whole prefix, their ancestors and themselves."""
    return torch.cat([ancestors.new_ones(ancestors.shape[0], prefix_len), ancestors], dim=1)


def in_window(query_positions: torch.Tensor, key_positions: torch.Tensor, window: int) -> torch.Tensor:
    """[B, q] and [B, kv] positions -> [B, q, kv] bool: the key lies within the last
    `window` positions of the query."""
    return key_positions[:, None, :] > query_positions[:, :, None] - window
