"""Drafters: who proposes the tree that the target verifies in a round.

The decode loop (eagle3.decoding.decode) asks its drafter four things, for all live rows at once:
    start(prompts, capacity)   a new decode: the prompts' ids, the longest prompt + budget
    propose(roots, remaining)  one DraftTree per row under its root, within its token budget
    observe(settled, seconds)  each row's verified outcome (the prefill's first), the round's time
    keep(rows)                 the rows still running, after some finished

A drafter serves one decode at a time (`start` resets it). `Drafter` itself drafts nothing:
each round verifies the root alone, which is plain decoding. `HeadDrafter` drafts with the
EAGLE-3 head (optionally with a depth policy), `CopyDrafter` copies from the context, and
`HybridDrafter` merges the two and decides when the head sits a round out.
`BudgetedDrafter` wraps any of them and cuts its trees to the size the device's measured
costs pay for (eagle3.budget); before each round it tells the head how far to draft, or to
rest (`head_limits`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from eagle3 import transfer
from eagle3.adaptive import AdaptiveDepth
from eagle3.budget import NodeBudget
from eagle3.head import Eagle3Head
from eagle3.lookup import COPIED, ContextIndex, CopyHitRate, LookupConfig, hybrid_tree
from eagle3.tree import DraftLimits, DraftTree, TreeConfig, draft_trees

if TYPE_CHECKING:
    from eagle3.decoding import Settled

DRAFTERS = ("plain", "eagle3", "lookup", "hybrid")
SPECULATIVE_DRAFTERS = DRAFTERS[1:]
HEAD_DRAFTERS = ("eagle3", "hybrid")  # the drafters that need an EAGLE-3 head


class Drafter:
    """No drafts: every round verifies the root alone (plain decoding)."""

    captures_features = False  # whether the target's forwards must return its fused features
    nodes = 1  # the most tree nodes a round verifies, root included (the target cache's headroom)

    def start(self, prompts: list[list[int]], capacity: int) -> None:
        pass

    def propose(self, roots: list[int], remaining: list[int]) -> list[DraftTree]:
        """roots[b]: row b's root, the last token the target produced; remaining[b]: tokens row b
        may still emit (a tree deeper than remaining - 1 would draft past the end)."""
        return [DraftTree.root_only(root) for root in roots]

    def observe(self, settled: list[Settled], seconds: float) -> None:
        pass

    def keep(self, rows: list[int]) -> None:
        pass

    def head_limits(self, limits: DraftLimits) -> None:
        """The next round's head drafts within `limits` (no levels: it rests); no head, no effect."""


class HeadDrafter(Drafter):
    """The EAGLE-3 head's dynamic tree. The head consumes each accepted position's (feature,
    next token) pair into its own cache, then expands the tree level by level (eagle3.tree).
    With a depth policy (one prompt), each round's depth and node budget come from it."""

    captures_features = True

    def __init__(self, head: Eagle3Head, tree: TreeConfig | None = None, policy: AdaptiveDepth | None = None):
        self.head, self.tree, self.policy = head, tree or TreeConfig(), policy
        self.tree.validate(head.config.draft_vocab_size)
        self.nodes = self.tree.total_tokens

    def start(self, prompts: list[list[int]], capacity: int) -> None:
        if self.policy is not None and len(prompts) != 1:
            raise ValueError(f"adaptive depth: decodes one prompt at a time, not {len(prompts)}")
        max_depth = max(self.tree.depth, self.policy.max_depth if self.policy else 0)
        # The draft cache also holds the tree's keys while drafting: top_k per level.
        self.cache = self.head.draft_cache(capacity + self.tree.top_k * max_depth)
        self.lengths = [0] * len(prompts)  # valid draft cache positions per row
        self.features: list[torch.Tensor | None] = [None] * len(prompts)  # [m, 3H] pairs not consumed yet...
        self.next_tokens: list[list[int]] = [[] for _ in prompts]  # ...and their m tokens, the last being the root
        self.drafted: int | None = None  # the most levels the head drafts this round (floors may stop it); None: it sat out
        self.round_tree = self.tree  # this round's tree (the policy's, with one)
        self.limits = DraftLimits()  # how far the next round drafts (head_limits)

    def head_limits(self, limits: DraftLimits) -> None:
        self.limits = limits

    def propose(self, roots: list[int], remaining: list[int]) -> list[DraftTree]:
        self.round_tree = tree = self.policy.tree(self.tree) if self.policy else self.tree
        limits, self.limits = self.limits, DraftLimits()  # limits hold for one round
        self.drafted = max(0, min(tree.depth, limits.levels, max(remaining) - 1))
        if self.drafted == 0:  # resting, or no room to draft (the run's last step): a plain step; its pairs wait
            return super().propose(roots, remaining)
        trees = draft_trees(self.head, self.cache, self.lengths, self.features, self.next_tokens, tree,
                            dataclasses.replace(limits, levels=self.drafted))
        self.lengths = [length + len(tokens) for length, tokens in zip(self.lengths, self.next_tokens)]
        self.features, self.next_tokens = [None] * len(roots), [[] for _ in roots]
        return trees

    def sit_out(self) -> None:
        """This round goes without the head: its pairs wait for its next draft."""
        self.drafted = None

    def observe(self, settled: list[Settled], seconds: float) -> None:
        for b, done in enumerate(settled):
            self.features[b] = done.next_features if self.features[b] is None else torch.cat(
                [self.features[b], done.next_features])
            self.next_tokens[b] += done.next_tokens
        if self.policy is not None and self.drafted is not None:
            self.policy.observe(self.drafted, len(settled[0].path), seconds)

    def keep(self, rows: list[int]) -> None:
        self.lengths = [self.lengths[b] for b in rows]
        self.features = [self.features[b] for b in rows]
        self.next_tokens = [self.next_tokens[b] for b in rows]
        self.cache.select_rows(transfer.to_device(rows, self.head.fc.weight.device))
        self.cache.truncate(max(self.lengths))


@dataclass
class CopyChains:
    """Each row's context index and the target's record on its copies."""

    index: ContextIndex
    hits: CopyHitRate


class CopyDrafter(Drafter):
    """Copies what followed the last occurrence of the text's ending (eagle3.lookup): a chain
    of up to lookup.tokens under the root. Needs no head and no features."""

    def __init__(self, lookup: LookupConfig | None = None):
        self.lookup = lookup or LookupConfig()
        self.lookup.validate()
        self.nodes = self.lookup.tokens + 1

    def start(self, prompts: list[list[int]], capacity: int) -> None:
        self.rows = [CopyChains(ContextIndex(prompt, self.lookup), CopyHitRate()) for prompt in prompts]

    def chains(self, remaining: list[int]) -> list[list[int]]:
        """Each row's copy chain for this round (maybe empty)."""
        return [row.index.propose(min(self.lookup.tokens, left - 1)) for row, left in zip(self.rows, remaining)]

    def propose(self, roots: list[int], remaining: list[int]) -> list[DraftTree]:
        trees = super().propose(roots, remaining)
        return self.merged(trees, self.chains(remaining), None)

    def merged(self, trees: list[DraftTree], chains: list[list[int]], budget: int | None) -> list[DraftTree]:
        """Each row's tree with its chain merged in, cut to `budget` non-root nodes (None: the chain's)."""
        return [hybrid_tree(tree, chain, row.hits.rate, budget or len(chain)) if chain else tree
                for tree, chain, row in zip(trees, chains, self.rows)]

    def observe(self, settled: list[Settled], seconds: float) -> None:
        for row, done in zip(self.rows, settled):
            row.index.extend(done.output_ids)
            if done.tree is not None:  # a verification round (not the prefill)
                copied = [source in COPIED for source in done.tree.sources or ()]
                row.hits.observe(sum(copied[node] for node in done.path) if copied else 0, sum(copied))

    def keep(self, rows: list[int]) -> None:
        self.rows = [self.rows[b] for b in rows]


class HybridDrafter(Drafter):
    """The head's tree with a copy chain merged under its root, verified in one pass. While the
    target accepts whole chains (every row on a streak), the head sits the round out: its
    drafting would cost more than the nodes it adds, and it catches up on the pairs next time."""

    captures_features = True

    def __init__(self, head: HeadDrafter, copy: CopyDrafter):
        self.head, self.copy = head, copy
        self.nodes = max(head.nodes, copy.nodes)

    def start(self, prompts: list[list[int]], capacity: int) -> None:
        self.head.start(prompts, capacity)
        self.copy.start(prompts, capacity)

    def propose(self, roots: list[int], remaining: list[int]) -> list[DraftTree]:
        chains = self.copy.chains(remaining)
        if all(chain and row.hits.streak for chain, row in zip(chains, self.copy.rows)):
            self.head.sit_out()
            return self.copy.merged(Drafter.propose(self, roots, remaining), chains, None)
        trees = self.head.propose(roots, remaining)
        return self.copy.merged(trees, chains, self.head.round_tree.total_tokens - 1 if self.head.drafted else None)

    def observe(self, settled: list[Settled], seconds: float) -> None:
        self.head.observe(settled, seconds)
        self.copy.observe(settled, seconds)

    def keep(self, rows: list[int]) -> None:
        self.head.keep(rows)
        self.copy.keep(rows)

    def head_limits(self, limits: DraftLimits) -> None:
        self.head.head_limits(limits)


class BudgetedDrafter(Drafter):
    """Any drafter whose trees a NodeBudget (eagle3.budget) cuts each round to the node count
    with the most expected tokens per second."""

    def __init__(self, inner: Drafter, budget: NodeBudget):
        self.inner, self.budget = inner, budget
        self.captures_features, self.nodes = inner.captures_features, inner.nodes

    def start(self, prompts: list[list[int]], capacity: int) -> None:
        self.inner.start(prompts, capacity)

    def propose(self, roots: list[int], remaining: list[int]) -> list[DraftTree]:
        start = time.perf_counter()
        self.inner.head_limits(self.budget.limits())
        trees = self.inner.propose(roots, remaining)  # its last act is the wait for the trees
        return self.budget.cut(trees, time.perf_counter() - start)

    def observe(self, settled: list[Settled], seconds: float) -> None:
        self.budget.observe(settled, seconds)
        self.inner.observe(settled, seconds)

    def keep(self, rows: list[int]) -> None:
        self.inner.keep(rows)


def drafter_named(name: str, head: Eagle3Head | None = None, tree: TreeConfig | None = None,
                  lookup: LookupConfig | None = None, policy: AdaptiveDepth | None = None,
                  budget: NodeBudget | None = None) -> Drafter:
    """The drafter a CLI or the app names: plain, eagle3, lookup or hybrid; with a budget, its
    trees are cut by it each round."""
    drafter = _named(name, head, tree, lookup, policy)
    return BudgetedDrafter(drafter, budget) if budget is not None and name != "plain" else drafter


def _named(name: str, head: Eagle3Head | None, tree: TreeConfig | None, lookup: LookupConfig | None,
           policy: AdaptiveDepth | None) -> Drafter:
    if name not in DRAFTERS:
        raise ValueError(f"drafter: {name!r} is not one of {', '.join(DRAFTERS)}")
    if name in HEAD_DRAFTERS and head is None:
        raise ValueError(f"drafter: {name} needs an EAGLE-3 head; use drafter lookup without one")
    if name == "plain":
        return Drafter()
    if name == "lookup":
        return CopyDrafter(lookup)
    if name == "eagle3":
        return HeadDrafter(head, tree, policy)
    return HybridDrafter(HeadDrafter(head, tree, policy), CopyDrafter(lookup))
