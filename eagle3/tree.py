"""The dynamic draft tree of EAGLE-2 / EAGLE-3.

Step 0 feeds the draft the newly accepted (feature, next token) pairs and takes the top_k
tokens of the last position as level 1. Each further level runs the top_k frontier nodes
in one forward (same position, each seeing its ancestors) and keeps the best top_k of their
top_k^2 children by cumulative log probability. Finally the best total_tokens - 1
candidates form the tree under the root (the last token the target produced).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eagle3.checks import integer_in
from eagle3.head import Eagle3Head
from eagle3.kv_cache import KVCache
from eagle3.masks import additive_mask


@dataclass
class TreeConfig:
    depth: int = 7  # draft levels: the most drafts one round can accept
    top_k: int = 10  # children per expanded node, and frontier width
    total_tokens: int = 60  # nodes verified per round, the root included

    def validate(self, draft_vocab_size: int | None = None) -> None:
        integer_in("depth", self.depth, 1, 64)
        integer_in("top_k", self.top_k, 1, 64)
        if draft_vocab_size is not None and self.top_k > draft_vocab_size:
            raise ValueError(f"top_k: {self.top_k} exceeds the head's draft vocabulary of {draft_vocab_size}")
        integer_in("total_tokens", self.total_tokens, 2, 1024, " (the root counts as one)")
        if self.total_tokens < self.top_k + 1:
            raise ValueError(
                f"total_tokens: {self.total_tokens} cannot hold the root and the top_k={self.top_k} first drafts; "
                f"use total_tokens >= {self.top_k + 1} or a smaller top_k"
            )


@dataclass
class DraftTree:
    """Nodes in an order where parents come before children; node 0 is the root."""

    tokens: torch.Tensor  # [n] target token ids
    depths: torch.Tensor  # [n] long, root 0
    parents: list[int]  # parent index per node, -1 for the root
    scores: list[float]  # cumulative draft log probability, root 0
    children: list[list[int]]  # per node, children by descending score
    ancestors: torch.Tensor  # [n, n] bool: node j is node i or an ancestor of it
    depth: int  # the deepest node's depth: the most drafts this tree lets a round accept
    sources: list[str] | None = None  # per node, who drafted it (eagle3.drafters.HybridDrafter); None: the head

    @classmethod
    def from_parents(cls, tokens: torch.Tensor, parents: list[int], scores: list[float],
                     sources: list[str] | None = None) -> "DraftTree":
        """The tree of tokens [n] whose node i hangs under parents[i] (< i; -1 for the root)."""
        n = len(parents)
        children: list[list[int]] = [[] for _ in range(n)]
        depths = [0] * n
        ancestors = torch.zeros(n, n, dtype=torch.bool)
        for node, parent in enumerate(parents):
            if parent >= 0:
                children[parent].append(node)
                depths[node] = depths[parent] + 1
                ancestors[node] = ancestors[parent]
            ancestors[node, node] = True
        for kids in children:
            kids.sort(key=lambda c: -scores[c])
        device = tokens.device
        return cls(tokens, torch.tensor(depths, device=device), parents, scores, children, ancestors.to(device),
                   max(depths), sources)

    @classmethod
    def root_only(cls, root: torch.Tensor) -> "DraftTree":
        return cls.from_parents(root.view(1), [-1], [0.0])

    def __len__(self) -> int:
        return len(self.parents)

    def source(self, node: int) -> str:
        return self.sources[node] if self.sources else "head"


def draft_tree(
    head: Eagle3Head,
    cache: KVCache,
    features: torch.Tensor,
    next_tokens: torch.Tensor,
    config: TreeConfig,
    depth: int | None = None,
) -> DraftTree:
    """One sequence: consume m new pairs and draft a tree under `root`.

    features [m, 3H]: target features of the last m accepted positions, which are the
    draft positions cache.length .. cache.length + m - 1; next_tokens [m]: the token after
    each of them (the last one is the root). The pairs stay in the draft cache; the tree's
    own keys are dropped before returning. depth overrides config.depth (budget caps).
    """
    return draft_trees(head, cache, [cache.length], [features], [next_tokens], config, depth)[0]


@torch.inference_mode()
def draft_trees(
    head: Eagle3Head,
    cache: KVCache,
    lengths: list[int],
    features: list[torch.Tensor],
    next_tokens: list[torch.Tensor],
    config: TreeConfig,
    depth: int | None = None,
) -> list[DraftTree]:
    """A batch of sequences in one ragged draft cache, one tree per row.

    Row b's valid draft keys are [0, lengths[b]); its m_b new pairs (features[b] [m_b, 3H],
    next_tokens[b] [m_b], the last being the row's root) are packed after them, so the row
    has lengths[b] + m_b valid keys afterwards. All rows draft the same depth in the same
    forwards: consume the pairs, expand the top_k best nodes level by level, keep the best
    total_tokens - 1 candidates.
    """
    last, lengths = consume_pairs(head, cache, lengths, features, next_tokens)
    depth = config.depth if depth is None else depth
    candidates = expand(head, cache, last, lengths, config.top_k, depth)
    roots = torch.stack([t[-1] for t in next_tokens])
    return candidates.best_trees(roots, config.total_tokens - 1)


def consume_pairs(head: Eagle3Head, cache: KVCache, lengths: list[int], features: list[torch.Tensor],
                  next_tokens: list[torch.Tensor]) -> tuple[torch.Tensor, list[int]]:
    """Run the head over each row's new pairs, right-padded to the longest row and written
    after the shared length, then pack them after the row's valid keys. Returns the hidden
    state at each row's last pair [B, 1, H] and the rows' new lengths."""
    batch, device, dtype = len(lengths), features[0].device, head.fc.weight.dtype
    counts = [f.shape[0] for f in features]
    width, written = max(counts), cache.length
    hidden_in = torch.zeros(batch, width, features[0].shape[-1], dtype=features[0].dtype, device=device)
    tokens = torch.zeros(batch, width, dtype=torch.long, device=device)
    for row, (f, t) in enumerate(zip(features, next_tokens)):
        hidden_in[row, : counts[row]], tokens[row, : counts[row]] = f, t
    steps, lengths_t = torch.arange(width, device=device), torch.tensor(lengths, device=device)
    keys = torch.arange(written + width, device=device)
    allowed = (keys[None, None, :] < lengths_t[:, None, None]) | (  # the row's own valid prefix,
        (keys[None, None, :] >= written) & (keys[None, None, :] - written <= steps[None, :, None]))  # then causal
    hidden = head(head.project(hidden_in), tokens, lengths_t[:, None] + steps, additive_mask(allowed, dtype),
                  cache.layers[0])
    cache.keep_rows(lengths, written, [torch.arange(m, device=device) for m in counts])
    last = hidden[torch.arange(batch, device=device), torch.tensor(counts, device=device) - 1][:, None]
    return last, [length + m for length, m in zip(lengths, counts)]


@dataclass
class Candidates:
    """Scored nodes under each row's root, any of which may join the row's tree: parents index
    the candidates (-1: the root), and a child never scores above its parent and comes after it."""

    tokens: torch.Tensor  # [B, n] target token ids
    scores: torch.Tensor  # [B, n] cumulative draft log probabilities
    parents: torch.Tensor  # [B, n]
    sources: list[list[str]] | None = None  # per row and candidate, who drafted it; None: the head

    def best_trees(self, roots: torch.Tensor, n_keep: int) -> list[DraftTree]:
        """The n_keep best-scoring candidates of each row under its root [B], as trees."""
        batch, n = self.scores.shape
        n_keep, device = min(n_keep, n), roots.device
        # Stable sort: a child never scores above its parent and comes later, so every kept
        # node's parent is kept too, ties included.
        kept = self.scores.sort(dim=1, descending=True, stable=True).indices[:, :n_keep].sort(dim=1).values
        new_index = torch.zeros(batch, n + 1, dtype=torch.long, device=device)  # slot n: the root
        new_index.scatter_(1, kept, torch.arange(1, n_keep + 1, device=device).expand(batch, n_keep))
        kept_parents = self.parents.gather(1, kept)
        kept_parents = new_index.gather(1, torch.where(kept_parents < 0, n, kept_parents)).tolist()
        kept_tokens, kept_scores = self.tokens.gather(1, kept), self.scores.gather(1, kept).tolist()
        kept_sources = [[self.sources[row][i] for i in ids] for row, ids in enumerate(kept.tolist())] if self.sources else None
        return [DraftTree.from_parents(torch.cat([roots[row : row + 1], kept_tokens[row]]), [-1] + kept_parents[row],
                                       [0.0] + kept_scores[row], ["root"] + kept_sources[row] if kept_sources else None)
                for row in range(batch)]


def expand(head: Eagle3Head, cache: KVCache, last: torch.Tensor, lengths: list[int], top_k: int,
           depth: int) -> Candidates:
    """Draft `depth` levels from the hidden states `last` [B, 1, H] after each row's root.
    The frontier's keys live in the cache only while drafting; it is truncated after."""
    batch, device, dtype = last.shape[0], last.device, head.fc.weight.dtype
    layer, stable, lengths_t = cache.layers[0], cache.length, torch.tensor(lengths, device=device)
    logp = torch.log_softmax(head.logits(last[:, 0]).float(), dim=-1)
    scores, draft_ids = logp.topk(top_k, dim=-1)  # level 1: [B, k]
    cand_tokens, cand_scores = [head.to_target_ids(draft_ids)], [scores]
    cand_parents = [torch.full((batch, top_k), -1, device=device)]
    frontier = torch.arange(top_k, device=device).expand(batch, top_k)  # candidate index of each frontier node
    frontier_hidden, frontier_tokens = last.expand(batch, top_k, -1), cand_tokens[0]
    visible = torch.zeros(batch, top_k, 0, dtype=torch.bool, device=device)  # frontier -> tree keys in cache
    eye = torch.eye(top_k, dtype=torch.bool, device=device).expand(batch, top_k, top_k)
    n_candidates = top_k
    prefix = torch.arange(stable, device=device)[None, None, :] < lengths_t[:, None, None]

    for level in range(1, depth):
        allowed = torch.cat([prefix.expand(batch, top_k, stable), visible, eye], dim=2)
        positions = (lengths_t + level - 1)[:, None].expand(batch, top_k)
        out = head(frontier_hidden, frontier_tokens, positions, additive_mask(allowed, dtype), layer)
        logp = torch.log_softmax(head.logits(out).float(), dim=-1)
        child_logp, child_ids = logp.topk(top_k, dim=-1)  # [B, k, k]
        child_scores = (scores[:, :, None] + child_logp).flatten(1)
        cand_tokens.append(head.to_target_ids(child_ids.flatten(1)))
        cand_scores.append(child_scores)
        cand_parents.append(frontier.repeat_interleave(top_k, dim=1))
        scores, best = child_scores.topk(top_k, dim=-1)
        rows = best // top_k
        frontier = n_candidates + best
        frontier_hidden = out.gather(1, rows[:, :, None].expand(-1, -1, out.shape[-1]))
        frontier_tokens = cand_tokens[-1].gather(1, best)
        visible = torch.cat([visible.gather(1, rows[:, :, None].expand(-1, -1, visible.shape[-1])),
                             eye.gather(1, rows[:, :, None].expand(-1, -1, top_k))], dim=2)
        n_candidates += top_k * top_k
    cache.truncate(stable)
    return Candidates(torch.cat(cand_tokens, 1), torch.cat(cand_scores, 1), torch.cat(cand_parents, 1))
