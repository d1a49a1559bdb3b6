"""Batch decoding: B prompts of different lengths decoded together (eagle3.decode.decode_rows),
speculatively while the batch is small enough for drafting to pay off, plainly beyond.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from eagle3.decode import GenerationConfig, decode_rows
from eagle3.events import RoundEvent
from eagle3.head import Eagle3Head
from eagle3.lookup import LookupConfig
from eagle3.stats import RunStats, collect
from eagle3.target import Target
from eagle3.tree import TreeConfig

# The largest batch that still drafts. On 2 CPU cores the default pair (SmolLM2 + its head,
# bfloat16) gains 1.27x at batch 2, 1.00x at 3 and 0.84x at 4, the stdlib pair 1.79x at 2
# and 1.33x at 4 (README, `bench --batch-sizes`); GPUs keep gaining far longer (the EAGLE-3
# paper: 1.4x at batch 64).
AUTO_MAX_SPECULATIVE_BATCH = {"cpu": 3, "cuda": 64}


def generate_batch(target: Target, head: Eagle3Head | None, prompts: Sequence[str | Sequence[int]], *args,
                   **kwargs) -> list[RunStats]:
    """stream_batch (same arguments) run to its end: one RunStats per prompt, in order."""
    events: list[list[RoundEvent]] = [[] for _ in prompts]
    for row, event in stream_batch(target, head, prompts, *args, **kwargs):
        events[row].append(event)
    return [collect(row_events) for row_events in events]


def stream_batch(
    target: Target,
    head: Eagle3Head | None,
    prompts: Sequence[str | Sequence[int]],
    tree: TreeConfig | None = None,
    config: GenerationConfig | None = None,
    max_speculative_batch: int | None | str = "auto",
    drafter: str = "eagle3",
    lookup: LookupConfig | None = None,
) -> Iterator[tuple[int, RoundEvent]]:
    """Decode all prompts together: (prompt index, event) for every row of every round, each
    row's events being what speculative_decode / plain_decode would yield for it alone.

    Without a head, or with more prompts than max_speculative_batch (where drafting stops
    paying off), this is plain batched decoding. "auto" takes the device's limit from
    AUTO_MAX_SPECULATIVE_BATCH; None never falls back."""
    if max_speculative_batch == "auto":
        max_speculative_batch = AUTO_MAX_SPECULATIVE_BATCH.get(target.device.type)
    speculative = (head is not None or drafter == "lookup") and (
        max_speculative_batch is None or len(prompts) <= max_speculative_batch)
    return decode_rows(target, head, prompts, drafter if speculative else None, tree, config, lookup=lookup)
