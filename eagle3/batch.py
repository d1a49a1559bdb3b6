"""Batch speculative decoding: B prompts of different lengths decoded together.

The rows share one cache but keep their own lengths: row b's valid keys are [0, L_b), and
every forward writes its new keys at the shared offset W = max L_b, where the per-row mask
finds them. After a round, row b's accepted positions are packed right after L_b, so a
shorter row only leaves a masked gap. Each row drafts its own tree (all in the same draft
forwards), all trees are verified in one target forward, and each row accepts, stops and
leaves the batch on its own. Lossless per row, like the single-sequence decoder.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from eagle3.acceptance import TokenState
from eagle3.decode import GenerationConfig, Run, clock, settle
from eagle3.events import RoundEvent
from eagle3.head import Eagle3Head
from eagle3.kv_cache import KVCache
from eagle3.stats import RunStats, collect
from eagle3.target import Target
from eagle3.tree import DraftTree, TreeConfig, draft_trees


class _Rows:
    """The live rows of a batch: their runs, cache lengths and pending draft pairs."""

    def __init__(self, runs: list[Run], device: torch.device):
        self.runs, self.device = runs, device
        self.ids = list(range(len(runs)))  # index of each live row in the caller's prompts
        self.lengths = [len(r.prompt_ids) for r in runs]  # valid target cache positions
        self.draft_lengths = [0] * len(runs)  # valid draft cache positions
        self.features: list[torch.Tensor] = []  # per row [m, 3H]: not yet consumed by the draft
        self.next_tokens: list[torch.Tensor] = []  # per row [m]; the last is the row's root

    def drop_finished(self, finished: list[bool], cache: KVCache, draft_cache: KVCache | None) -> None:
        keep = [i for i, done in enumerate(finished) if not done]
        if len(keep) == len(finished):
            return
        self.runs = [self.runs[i] for i in keep]
        self.ids = [self.ids[i] for i in keep]
        self.lengths = [self.lengths[i] for i in keep]
        self.draft_lengths = [self.draft_lengths[i] for i in keep]
        self.features = [self.features[i] for i in keep] if self.features else []  # empty when not drafting
        self.next_tokens = [self.next_tokens[i] for i in keep]
        rows = torch.tensor(keep, dtype=torch.long, device=self.device)
        # The shared length shrinks to the longest live row: a finished row may have kept
        # drafts past its budget, which the cache's capacity does not allow for.
        for kv, lengths in ((cache, self.lengths), (draft_cache, self.draft_lengths)):
            if kv is not None:
                kv.select_rows(rows)
                kv.truncate(max(lengths, default=0))


# The largest batch that still drafts. On 2 CPU cores the embedded pair gains 1.79x at batch
# 2, 1.33x at 4 and loses from 8 on (0.87x; README, `bench --batch-sizes`); GPUs keep
# gaining far longer (the EAGLE-3 paper: 1.4x at batch 64).
AUTO_MAX_SPECULATIVE_BATCH = {"cpu": 4, "cuda": 64}


def _ragged_allowed(lengths: torch.Tensor, written: int, own: torch.Tensor) -> torch.Tensor:
    """[B, q, written + q] bool: each row's valid prefix [0, L_b), then `own` [B, q, q]
    among the q new positions written at `written`."""
    batch, q = own.shape[0], own.shape[1]
    prefix = torch.arange(written, device=own.device)[None, None, :] < lengths[:, None, None]
    return torch.cat([prefix.expand(batch, q, written), own], dim=2)


def generate_batch(target: Target, head: Eagle3Head | None, prompts: Sequence[str | Sequence[int]], *args,
                   **kwargs) -> list[RunStats]:
    """stream_batch (same arguments) run to its end: one RunStats per prompt, in order."""
    events: list[list[RoundEvent]] = [[] for _ in prompts]
    for row, event in stream_batch(target, head, prompts, *args, **kwargs):
        events[row].append(event)
    return [collect(row_events) for row_events in events]


@torch.inference_mode()
def stream_batch(
    target: Target,
    head: Eagle3Head | None,
    prompts: Sequence[str | Sequence[int]],
    tree: TreeConfig | None = None,
    config: GenerationConfig | None = None,
    max_speculative_batch: int | None | str = "auto",
) -> Iterator[tuple[int, RoundEvent]]:
    """Decode all prompts together: (prompt index, event) for every row of every round, each
    row's events being what speculative_decode / plain_decode would yield for it alone.

    Without a head, or with more prompts than max_speculative_batch (where drafting stops
    paying off), this is plain batched decoding: the same loop with root-only trees.
    "auto" takes the device's limit from AUTO_MAX_SPECULATIVE_BATCH; None never falls back."""
    tree, config = tree or TreeConfig(), config or GenerationConfig()
    if max_speculative_batch == "auto":
        max_speculative_batch = AUTO_MAX_SPECULATIVE_BATCH.get(target.device.type)
    speculative = head is not None and (max_speculative_batch is None or len(prompts) <= max_speculative_batch)
    if speculative:
        tree.validate(head.config.draft_vocab_size)
    runs = [Run(target, prompt, config) for prompt in prompts]
    device = target.device
    rows = _Rows(runs, device)
    longest = max(len(r.prompt_ids) + r.budget for r in runs)
    cache = target.new_cache(longest + (tree.total_tokens if speculative else 1))
    draft_cache = KVCache(1, longest + tree.top_k * tree.depth) if speculative else None

    # Prefill: right-padded prompts, each row causal over its own tokens.
    start = clock(device)
    width = max(rows.lengths)
    input_ids = torch.zeros(len(runs), width, dtype=torch.long, device=device)
    for row, run in enumerate(runs):
        input_ids[row, : len(run.prompt_ids)] = torch.tensor(run.prompt_ids, device=device)
    positions = torch.arange(width, device=device).expand(len(runs), width)
    causal = torch.ones(width, width, dtype=torch.bool, device=device).tril().expand(len(runs), width, width)
    mask = target.attention_mask(causal, positions, positions)
    out = target.forward(input_ids, positions, cache, mask, capture=speculative)
    verify_end = clock(device)
    events = []  # this round's, yielded once its bookkeeping is done: a consumer's time stays out of it
    for row, run in enumerate(runs):
        n = rows.lengths[row]
        root = run.pick(out.logits[row, n - 1])
        events.append((row, run.emit([(root, TokenState.BONUS, None)], None, [], 0.0, verify_end - start, verify_end)))
        if speculative:
            rows.features.append(out.features[row, :n])
            rows.next_tokens.append(torch.cat([input_ids[row, 1:n], input_ids.new_tensor([root])]))
        else:
            rows.next_tokens.append(input_ids.new_tensor([root]))
    cache.truncate(width)
    rows.drop_finished([event.finished for _, event in events], cache, draft_cache)
    yield from events

    while rows.runs:
        start = clock(device)
        depth = min(tree.depth, max(run.remaining for run in rows.runs) - 1) if speculative else 0
        if depth > 0:
            drafts = draft_trees(head, draft_cache, rows.draft_lengths, rows.features, rows.next_tokens, tree, depth)
            rows.draft_lengths = [n + len(t) for n, t in zip(rows.draft_lengths, rows.next_tokens)]  # pairs consumed
        else:
            drafts = [DraftTree.root_only(t[-1:]) for t in rows.next_tokens]
        draft_end = clock(device)

        written, lengths = cache.length, torch.tensor(rows.lengths, device=device)
        tokens = torch.stack([d.tokens for d in drafts])
        positions = lengths[:, None] + torch.stack([d.depths for d in drafts])
        allowed = _ragged_allowed(lengths, written, torch.stack([d.ancestors for d in drafts]))
        key_positions = torch.cat([torch.arange(written, device=device).expand(len(drafts), written), positions], dim=1)
        out = target.forward(tokens, positions, cache, target.attention_mask(allowed, positions, key_positions),
                             capture=speculative)
        verify_end = clock(device)

        kept, events = [], []
        for row, (run, draft) in enumerate(zip(rows.runs, drafts)):
            settled = settle(run, draft, out.logits[row], out.features[row] if speculative else None)
            kept.append(settled.kept)
            rows.next_tokens[row] = settled.next_tokens
            if speculative:
                rows.features[row] = settled.next_features
            events.append((rows.ids[row], run.emit(settled.candidates, draft if depth > 0 else None, settled.path,
                                                   draft_end - start, verify_end - draft_end, verify_end, depth)))
        cache.keep_rows(rows.lengths, written, kept)
        rows.lengths = [length + k.numel() for length, k in zip(rows.lengths, kept)]
        rows.drop_finished([event.finished for _, event in events], cache, draft_cache)
        yield from events
