"""When a batch still drafts: speculation pays while the device has idle compute for the
tree; a larger batch leaves it less, so beyond a device's limit a batch decodes plainly.
"""

from __future__ import annotations

import torch

from eagle3.drafters import Drafter

# The largest batch that still drafts by default, per device type: on 2 CPU cores the gain
# falls below 1 within a few rows (docs/results.md, `bench --batch-sizes`), while GPUs keep
# gaining far longer (the EAGLE-3 paper reports gains at batch 64).
AUTO_MAX_SPECULATIVE_BATCH = {"cpu": 3, "cuda": 64}


def batch_drafter(drafter: Drafter | None, batch_size: int, device: torch.device,
                  max_speculative_batch: int | None | str = "auto") -> Drafter | None:
    """`drafter` for a batch of this size, or None (plain decoding) beyond max_speculative_batch.
    "auto" takes the device's limit from AUTO_MAX_SPECULATIVE_BATCH; None never falls back."""
    if max_speculative_batch == "auto":
        max_speculative_batch = AUTO_MAX_SPECULATIVE_BATCH.get(device.type)
    if max_speculative_batch is not None and batch_size > max_speculative_batch:
        return None
    return drafter
