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

from eagle3.head import Eagle3Head
from eagle3.kv_cache import KVCache
from eagle3.masks import additive_mask, causal_mask, tree_allowed


@dataclass
class TreeConfig:
    depth: int = 7  # draft levels: the most drafts one round can accept
    top_k: int = 10  # children per expanded node, and frontier width
    total_tokens: int = 60  # nodes verified per round, the root included

    def validate(self, draft_vocab_size: int | None = None) -> None:
        if not 1 <= self.depth <= 64:
            raise ValueError(f"depth: {self.depth} is outside [1, 64]")
        if not 1 <= self.top_k <= 64:
            raise ValueError(f"top_k: {self.top_k} is outside [1, 64]")
        if draft_vocab_size is not None and self.top_k > draft_vocab_size:
            raise ValueError(f"top_k: {self.top_k} exceeds the head's draft vocabulary of {draft_vocab_size}")
        if not 2 <= self.total_tokens <= 1024:
            raise ValueError(f"total_tokens: {self.total_tokens} is outside [2, 1024] (the root counts as one)")


@dataclass
class DraftTree:
    """Nodes in an order where parents come before children; node 0 is the root."""

    tokens: torch.Tensor  # [n] target token ids
    depths: torch.Tensor  # [n] long, root 0
    parents: list[int]  # parent index per node, -1 for the root
    scores: list[float]  # cumulative draft log probability, root 0
    children: list[list[int]]  # per node, children by descending score
    ancestors: torch.Tensor  # [n, n] bool: node j is node i or an ancestor of it

    @classmethod
    def build(cls, tokens: torch.Tensor, depths: torch.Tensor, parents: list[int], scores: list[float]) -> "DraftTree":
        n = len(parents)
        children: list[list[int]] = [[] for _ in range(n)]
        ancestors = torch.zeros(n, n, dtype=torch.bool)
        for node, parent in enumerate(parents):
            if parent >= 0:
                children[parent].append(node)
                ancestors[node] = ancestors[parent]
            ancestors[node, node] = True
        for kids in children:
            kids.sort(key=lambda c: -scores[c])
        return cls(tokens, depths, parents, scores, children, ancestors.to(tokens.device))

    @classmethod
    def root_only(cls, root: torch.Tensor) -> "DraftTree":
        return cls.build(root.view(1), torch.zeros(1, dtype=torch.long, device=root.device), [-1], [0.0])

    def __len__(self) -> int:
        return len(self.parents)


@torch.inference_mode()
def draft_tree(
    head: Eagle3Head,
    cache: KVCache,
    features: torch.Tensor,
    next_tokens: torch.Tensor,
    root: torch.Tensor,
    config: TreeConfig,
    depth: int | None = None,
) -> DraftTree:
    """Consume new pairs and draft a tree under `root`.

    features [m, 3H]: target features of the last m accepted positions, which are the
    draft positions cache.length .. cache.length + m - 1; next_tokens [m]: the token after
    each of them (the last one is the root). The pairs stay in the draft cache; the tree's
    own keys are dropped before returning. depth overrides config.depth (budget caps).
    """
    depth = config.depth if depth is None else depth
    top_k, device, dtype = config.top_k, features.device, head.fc.weight.dtype
    layer = cache.layers[0]

    past, m = cache.length, features.shape[0]
    positions = torch.arange(past, past + m, device=device)[None]
    hidden = head(head.project(features)[None], next_tokens[None], positions, causal_mask(past, m, dtype, device), layer)
    stable = cache.length
    last = hidden[:, -1:]  # [1, 1, H]

    logp = torch.log_softmax(head.logits(last[0, 0]).float(), dim=-1)
    scores, draft_ids = logp.topk(top_k)  # level 1: [k]
    cand_tokens, cand_scores = [head.to_target_ids(draft_ids)], [scores]
    cand_parents = [torch.full((top_k,), -1, device=device)]
    frontier = torch.arange(top_k, device=device)  # candidate index of each frontier node
    frontier_hidden = last.expand(1, top_k, -1)
    frontier_tokens = cand_tokens[0]
    visible = torch.zeros(top_k, 0, dtype=torch.bool, device=device)  # frontier -> tree keys in cache
    eye = torch.eye(top_k, dtype=torch.bool, device=device)
    n_candidates = top_k

    for level in range(1, depth):
        allowed = tree_allowed(stable, torch.cat([visible, eye], dim=1))
        positions = torch.full((1, top_k), stable + level - 1, device=device)
        out = head(frontier_hidden, frontier_tokens[None], positions, additive_mask(allowed, dtype), layer)
        logp = torch.log_softmax(head.logits(out[0]).float(), dim=-1)
        child_logp, child_ids = logp.topk(top_k, dim=-1)  # [k, k]
        child_scores = (scores[:, None] + child_logp).flatten()
        cand_tokens.append(head.to_target_ids(child_ids.flatten()))
        cand_scores.append(child_scores)
        cand_parents.append(frontier.repeat_interleave(top_k))
        scores, best = child_scores.topk(top_k)
        rows = best // top_k
        frontier = n_candidates + best
        frontier_hidden = out[:, rows]
        frontier_tokens = cand_tokens[-1][best]
        visible = torch.cat([visible[rows], eye[rows]], dim=1)
        n_candidates += top_k * top_k
    cache.truncate(stable)

    tokens, all_scores, parents = torch.cat(cand_tokens), torch.cat(cand_scores), torch.cat(cand_parents)
    n_keep = min(config.total_tokens - 1, n_candidates)
    # Stable sort: a child never scores above its parent and comes later, so every kept
    # node's parent is kept too, ties included.
    kept = all_scores.sort(descending=True, stable=True).indices[:n_keep].sort().values
    new_index = torch.zeros(n_candidates + 1, dtype=torch.long, device=device)  # slot n_candidates: root
    new_index[kept] = torch.arange(1, n_keep + 1, device=device)
    kept_parents = parents[kept]
    kept_parents = torch.where(kept_parents < 0, n_candidates, kept_parents)
    parent_list = [-1] + new_index[kept_parents].tolist()
    depths = [0] * (n_keep + 1)
    for node in range(1, n_keep + 1):
        depths[node] = depths[parent_list[node]] + 1
    return DraftTree.build(
        torch.cat([root.view(1), tokens[kept]]),
        torch.tensor(depths, device=device),
        parent_list,
        [0.0] + all_scores[kept].tolist(),
    )
