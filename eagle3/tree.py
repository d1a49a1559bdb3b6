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

from eagle3 import transfer
from eagle3.checks import integer_in
from eagle3.head import Eagle3Head
from eagle3.kv_cache import KVCache
from eagle3.masks import ragged_allowed
from eagle3.native import layer_ops


MAX_DEPTH = 64  # draft levels a tree may have
NO_FLOOR = float("-inf")


@dataclass
class TreeConfig:
    depth: int = 7  # draft levels: the most drafts one round can accept
    top_k: int = 10  # children per expanded node, and frontier width
    total_tokens: int = 60  # nodes verified per round, the root included

    def validate(self, draft_vocab_size: int | None = None) -> None:
        integer_in("depth", self.depth, 1, MAX_DEPTH)
        integer_in("top_k", self.top_k, 1, 64)
        if draft_vocab_size is not None and self.top_k > draft_vocab_size:
            raise ValueError(f"top_k: {self.top_k} exceeds the head's draft vocabulary of {draft_vocab_size}")
        integer_in("total_tokens", self.total_tokens, 2, 1024, " (the root counts as one)")
        if self.total_tokens < self.top_k + 1:
            raise ValueError(
                f"total_tokens: {self.total_tokens} cannot hold the root and the top_k={self.top_k} first drafts; "
                f"use total_tokens >= {self.top_k + 1} or a smaller top_k"
            )


@dataclass(frozen=True)
class DraftLimits:
    """How far the head drafts a round (eagle3.budget sets them; the defaults draft the tree's depth).

    A child never scores above its parent, so once a level's best frontier score lies below
    the next depth's floor, no deeper node could be worth verifying and drafting stops there."""

    levels: int = MAX_DEPTH  # the most levels; 0: the head rests
    floors: tuple[float, ...] = ()  # floors[d]: the least score (cumulative log probability) worth a depth-d node

    def floor(self, depth: int) -> float:
        return self.floors[depth] if depth < len(self.floors) else NO_FLOOR


@dataclass
class DraftTree:
    """A round's draft, as host data: nodes in an order where parents come before children;
    node 0 is the root (the last token the target produced)."""

    tokens: list[int]  # target token ids
    parents: list[int]  # parent index per node, -1 for the root
    scores: list[float]  # cumulative draft log probability, root 0
    children: list[list[int]]  # per node, children by descending score
    depths: list[int]  # root 0
    sources: list[str] | None = None  # per node: "root", "head", "copy" or "both" (eagle3.lookup); None: the head

    @classmethod
    def from_parents(cls, tokens: list[int], parents: list[int], scores: list[float],
                     sources: list[str] | None = None) -> "DraftTree":
        """The tree of tokens whose node i hangs under parents[i] (< i; -1 for the root)."""
        children: list[list[int]] = [[] for _ in parents]
        depths = [0] * len(parents)
        for node, parent in enumerate(parents):
            if parent >= 0:
                children[parent].append(node)
                depths[node] = depths[parent] + 1
        for kids in children:
            kids.sort(key=lambda c: -scores[c])
        return cls(list(tokens), list(parents), list(scores), children, depths, sources)

    @classmethod
    def root_only(cls, root: int) -> "DraftTree":
        return cls.from_parents([root], [-1], [0.0])

    @classmethod
    def from_candidates(cls, root: int, kept: list[int], tokens: list[int], parents: list[int], scores: list[float],
                        sources: list[str] | None = None) -> "DraftTree":
        """The tree of candidates `kept` (ascending indices, every kept parent kept too) under
        `root`; tokens, parents (-1: the root) and scores are the kept candidates', in order."""
        new_index = {old: new for new, old in enumerate(kept, 1)}
        return cls.from_parents([root] + tokens, [-1] + [new_index.get(p, 0) for p in parents], [0.0] + scores,
                                ["root"] + sources if sources else None)

    def __len__(self) -> int:
        return len(self.parents)

    @property
    def depth(self) -> int:
        """The deepest node's depth: the most drafts this tree lets a round accept."""
        return max(self.depths)

    def source(self, node: int) -> str:
        return self.sources[node] if self.sources else "head"

    def best(self, n: int, values: list[float] | None = None) -> "DraftTree":
        """The tree of its n best non-root nodes, by `values` (per node; default: the scores).
        Values never rise along a path and a child comes after its parent, so the stable
        best-first order keeps every kept node's parent, as in Candidates.best_trees."""
        if n >= len(self) - 1:
            return self
        values = values or self.scores
        kept = sorted(sorted(range(1, len(self)), key=lambda i: -values[i])[:n])
        sources = [self.sources[i] for i in kept] if self.sources else None
        return DraftTree.from_candidates(self.tokens[0], [i - 1 for i in kept], [self.tokens[i] for i in kept],
                                         [self.parents[i] - 1 for i in kept], [self.scores[i] for i in kept], sources)

    def ancestors(self) -> torch.Tensor:
        """[n, n] bool on the host: node j is node i or an ancestor of it (the verification mask)."""
        seen = torch.eye(len(self), dtype=torch.bool)
        for node, parent in enumerate(self.parents):
            if parent >= 0:
                seen[node] |= seen[parent]
        return seen


def stack_trees(trees: list[DraftTree], device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Trees of up to n nodes on the device as tokens [B, n], depths [B, n] and ancestors
    [B, n, n], moved without waiting; a smaller tree is padded with nodes that see only the
    prefix and themselves (their keys are never kept and their logits never read)."""
    n = max(len(tree) for tree in trees)
    tokens = torch.zeros(len(trees), n, dtype=torch.long)
    depths = torch.zeros(len(trees), n, dtype=torch.long)
    ancestors = torch.eye(n, dtype=torch.bool).repeat(len(trees), 1, 1)
    for row, tree in enumerate(trees):
        m = len(tree)
        tokens[row, :m], depths[row, :m] = torch.tensor(tree.tokens), torch.tensor(tree.depths)
        ancestors[row, :m, :m] = tree.ancestors()
    return (transfer.to_device(tokens, device), transfer.to_device(depths, device),
            transfer.to_device(ancestors, device, torch.bool))


def draft_tree(
    head: Eagle3Head,
    cache: KVCache,
    features: torch.Tensor,
    next_tokens: list[int],
    config: TreeConfig,
    depth: int | None = None,
) -> DraftTree:
    """One sequence: consume m new pairs and draft a tree under its root.

    features [m, 3H]: target features of the last m accepted positions, which are the
    draft positions cache.length .. cache.length + m - 1; next_tokens (m ids): the token after
    each of them (the last one is the root). The pairs stay in the draft cache; the tree's
    own keys are dropped before returning. depth, where given, caps config.depth.
    """
    return draft_trees(head, cache, [cache.length], [features], [next_tokens], config,
                       DraftLimits(config.depth if depth is None else depth))[0]


@torch.inference_mode()
def draft_trees(
    head: Eagle3Head,
    cache: KVCache,
    lengths: list[int],
    features: list[torch.Tensor],
    next_tokens: list[list[int]],
    config: TreeConfig,
    limits: DraftLimits | None = None,
) -> list[DraftTree]:
    """A batch of sequences in one ragged draft cache, one tree per row.

    Row b's valid draft keys are [0, lengths[b]); its m_b new pairs (features[b] [m_b, 3H],
    next_tokens[b] m_b ids, the last being the row's root) are packed after them, so the row
    has lengths[b] + m_b valid keys afterwards. All rows draft the same levels in the same
    forwards: consume the pairs, expand the top_k best nodes level by level (config.depth
    levels, fewer within `limits`), keep the best total_tokens - 1 candidates. The trees
    reach the host in one read.
    """
    limits = limits or DraftLimits()
    last, lengths = consume_pairs(head, cache, lengths, features, next_tokens)
    candidates = expand(head, cache, last, lengths, config.top_k, min(config.depth, limits.levels), limits)
    return candidates.best_trees([tokens[-1] for tokens in next_tokens], config.total_tokens - 1)


def consume_pairs(head: Eagle3Head, cache: KVCache, lengths: list[int], features: list[torch.Tensor],
                  next_tokens: list[list[int]]) -> tuple[torch.Tensor, list[int]]:
    """Run the head over each row's new pairs, right-padded to the longest row and written
    after the shared length, then pack them after the row's valid keys. Returns the hidden
    state at each row's last pair [B, 1, H] and the rows' new lengths."""
    batch, device = len(lengths), features[0].device
    counts = [f.shape[0] for f in features]
    width, written = max(counts), cache.length
    hidden_in = torch.zeros(batch, width, features[0].shape[-1], dtype=features[0].dtype, device=device)
    for row, f in enumerate(features):
        hidden_in[row, : counts[row]] = f
    tokens = transfer.to_device([t + [0] * (width - len(t)) for t in next_tokens], device)
    lengths_t, last_pairs = transfer.to_device([lengths, [m - 1 for m in counts]], device)
    steps, keys = torch.arange(width, device=device), torch.arange(written + width, device=device)
    allowed = (keys[None, None, :] < lengths_t[:, None, None]) | (  # the row's own valid prefix,
        (keys[None, None, :] >= written) & (keys[None, None, :] - written <= steps[None, :, None]))  # then causal
    hidden = head(head.project(hidden_in), tokens, lengths_t[:, None] + steps, allowed[:, None], cache.layers[0])
    cache.keep_rows(lengths, written, [list(range(m)) for m in counts])
    last = hidden[torch.arange(batch, device=device), last_pairs][:, None]
    return last, [length + m for length, m in zip(lengths, counts)]


@dataclass
class Candidates:
    """Scored nodes under each row's root, on the device, any of which may join the row's tree:
    parents index the candidates (-1: the root), and a child never scores above its parent and
    comes after it."""

    tokens: torch.Tensor  # [B, n] target token ids
    scores: torch.Tensor  # [B, n] cumulative draft log probabilities
    parents: torch.Tensor  # [B, n]

    def best_trees(self, roots: list[int], n_keep: int) -> list[DraftTree]:
        """The n_keep best-scoring candidates of each row under its root, as trees on the host."""
        n_keep = min(n_keep, self.scores.shape[1])
        # Stable sort: a child never scores above its parent and comes later, so every kept
        # node's parent is kept too, ties included.
        kept = self.scores.sort(dim=1, descending=True, stable=True).indices[:, :n_keep].sort(dim=1).values
        kept, tokens, parents, scores = transfer.to_host(kept, self.tokens.gather(1, kept), self.parents.gather(1, kept),
                                                         self.scores.gather(1, kept))
        return [DraftTree.from_candidates(*row) for row in zip(roots, kept, tokens, parents, scores)]


@dataclass
class Level:
    """A drafted level: each of its n parents' top_k most likely children, and the best top_k
    of them all, the next frontier."""

    tokens: torch.Tensor  # [B, n * top_k] target ids; parent i's children at i * top_k ..., best first
    scores: torch.Tensor  # [B, n * top_k] the parent's score plus the child's log probability
    best: torch.Tensor  # [B, top_k] the best children's indices, best first
    best_scores: torch.Tensor  # [B, top_k]
    best_tokens: torch.Tensor  # [B, top_k]


def top_children(logits: torch.Tensor, scores: torch.Tensor, d2t: torch.Tensor, top_k: int) -> Level:
    """The level under n parents: their logits [B, n, V], their scores [B, n] and the head's
    d2t. In one C++ call on a CPU where the module is built (eagle3/csrc/top_children.cpp),
    else in ATen ops; the two may differ in a score's last bits and in the order of equal
    scores."""
    ops = layer_ops() if logits.device.type == "cpu" else None
    if ops is not None:
        return Level(*ops.top_children(logits, scores, d2t, top_k))
    child_logp, child_ids = torch.log_softmax(logits.float(), dim=-1).topk(top_k, dim=-1)  # [B, n, k]
    child_scores, child_ids = (scores[:, :, None] + child_logp).flatten(1), child_ids.flatten(1)
    tokens = child_ids + d2t[child_ids]
    best_scores, best = child_scores.topk(top_k, dim=-1)
    return Level(tokens, child_scores, best, best_scores, tokens.gather(1, best))


def expand(head: Eagle3Head, cache: KVCache, last: torch.Tensor, lengths: list[int], top_k: int,
           depth: int, limits: DraftLimits = DraftLimits()) -> Candidates:
    """Draft up to `depth` levels from the hidden states `last` [B, 1, H] after each row's
    root, stopping early where the limits' floors say no deeper node could pay. The
    frontier's keys live in the cache only while drafting; it is truncated after."""
    batch, device = last.shape[0], last.device
    layer, stable = cache.layers[0], cache.length
    level = top_children(head.logits(last), torch.zeros(batch, 1, device=device), head.d2t, top_k)  # the root's
    cand_tokens, cand_scores = [level.tokens], [level.scores]
    cand_parents = [torch.full((batch, top_k), -1, device=device)]
    # The frontier: its nodes' candidate indices, and their rows in the hidden states they came from.
    frontier, rows, hidden = level.best, level.best // top_k, last
    lengths_t = transfer.to_device(lengths, device)
    own = torch.eye(top_k, dtype=torch.bool, device=device).expand(batch, top_k, top_k)
    allowed = ragged_allowed(lengths_t, stable, own)  # each node: its row's prefix, its ancestors' keys, its own
    n_candidates = top_k

    for drafted in range(1, depth):
        floor = limits.floor(drafted + 1)
        if floor > NO_FLOOR and level.best_scores.max().item() < floor:
            break  # the frontier's children score no higher than it: none would be kept
        out = head(hidden.gather(1, rows[:, :, None].expand(-1, -1, hidden.shape[-1])), level.best_tokens,
                   (lengths_t[:, None] + drafted - 1).expand(batch, top_k), allowed[:, None], layer)
        level = top_children(head.logits(out), level.best_scores, head.d2t, top_k)
        cand_tokens.append(level.tokens)
        cand_scores.append(level.scores)
        cand_parents.append(frontier[:, :, None].expand(-1, -1, top_k).flatten(1))
        frontier, rows, hidden = n_candidates + level.best, level.best // top_k, out
        allowed = torch.cat([allowed.gather(1, rows[:, :, None].expand(-1, -1, allowed.shape[-1])), own], dim=2)
        n_candidates += top_k * top_k
    cache.truncate(stable)
    return Candidates(torch.cat(cand_tokens, 1), torch.cat(cand_scores, 1), torch.cat(cand_parents, 1))
