"""Additive attention masks (0 where attention is allowed, the dtype's minimum elsewhere)."""

from __future__ import annotations

import torch


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[q, kv] bool -> [1, 1, q, kv] additive mask in dtype."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)[None, None]


def causal_mask(past: int, n: int, dtype: torch.dtype, device) -> torch.Tensor:
    """[1, 1, n, past + n]: n new positions see all past positions and causally each other."""
    return additive_mask(torch.ones(n, past + n, dtype=torch.bool, device=device).tril(past), dtype)


def tree_allowed(prefix_len: int, ancestors: torch.Tensor) -> torch.Tensor:
    """[n, prefix_len + n] bool: tree nodes see the whole prefix, their ancestors and themselves."""
    return torch.cat([ancestors.new_ones(ancestors.shape[0], prefix_len), ancestors], dim=1)


def in_window(prefix_len: int, positions: torch.Tensor, window: int) -> torch.Tensor:
    """[n, prefix_len + n] bool: the key lies within the last `window` positions of the query."""
    key_positions = torch.cat([torch.arange(prefix_len, device=positions.device), positions])
    return key_positions[None, :] > positions[:, None] - window
