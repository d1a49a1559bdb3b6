"""Context drafting: copy what followed the last occurrence of the text's current ending.

A reply that quotes the question, a code edit that returns most of its input, a summary or
a multi-turn chat repeats long spans of its context. `ContextIndex` keeps, for every n-gram
of the prompt and the output so far (n <= max_ngram), where its latest occurrence ended;
it is extended with each round's accepted tokens, never rebuilt. The longest n-gram that
ends the text and occurred before proposes the tokens that followed it: a copy chain.

`hybrid_tree` puts a copy chain under the root of the head's draft tree: shared prefixes
merge, and the node budget goes to the candidates with the best expected acceptance (the
head's cumulative log probability; d * log(hit rate) for the chain's d-th token, the hit
rate being the measured share of copied tokens the target accepted). The drafters that use
them are eagle3.drafters' CopyDrafter and HybridDrafter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from eagle3.tree import DraftTree

COPIED = frozenset({"copy", "both"})  # the sources of drafts that came from the context


@dataclass
class LookupConfig:
    max_ngram: int = 3  # the longest ending that is looked up
    min_ngram: int = 1  # the shortest: a single repeated token already proposes a copy
    tokens: int = 10  # the longest copy chain

    def validate(self) -> None:
        if not 1 <= self.min_ngram <= self.max_ngram <= 16:
            raise ValueError(f"lookup n-grams: {self.min_ngram}..{self.max_ngram}; use 1 <= min <= max <= 16")
        if not 1 <= self.tokens <= 64:
            raise ValueError(f"lookup tokens: {self.tokens} is outside [1, 64]")


class ContextIndex:
    """The token sequence so far and, per n-gram, the end of its latest occurrence that has a
    continuation. Extending by m tokens costs m * max_ngram dictionary writes."""

    def __init__(self, tokens: list[int], config: LookupConfig):
        self.config = config
        self.tokens: list[int] = []
        self.ends: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, new: list[int]) -> None:
        for token in new:
            end = len(self.tokens)  # the n-grams ending here now have a continuation: `token`
            for n in range(1, min(self.config.max_ngram, end) + 1):
                self.ends[tuple(self.tokens[end - n:end])] = end
            self.tokens.append(token)

    def propose(self, length: int) -> list[int]:
        """Up to `length` tokens that followed the longest earlier occurrence of the ending."""
        for n in range(min(self.config.max_ngram, len(self.tokens)), self.config.min_ngram - 1, -1):
            end = self.ends.get(tuple(self.tokens[-n:]))
            if end is not None:
                return self.tokens[end:end + length]
        return []


class CopyHitRate:
    """The share of copied tokens the target accepted, counting each chain's accepted prefix and
    its first refusal (later tokens were never tested); starts at `prior` worth `weight` tokens.
    `streak`: the last round copied two tokens or more and the target accepted them all."""

    def __init__(self, prior: float = 0.5, weight: float = 4.0):
        self.hits, self.tries = prior * weight, weight
        self.streak = False

    def observe(self, accepted: int, proposed: int) -> None:
        if proposed:
            self.hits += accepted
            self.tries += min(proposed, accepted + 1)
        self.streak = proposed >= 2 and accepted == proposed

    @property
    def rate(self) -> float:
        return min(max(self.hits / self.tries, 1e-3), 0.999)


def hybrid_tree(tree: DraftTree, chain: list[int], hit_rate: float, budget: int) -> DraftTree:
    """`tree` (the head's, possibly root-only) with the copy `chain` merged under its root,
    cut to the `budget` best non-root nodes. Node sources: "head", "copy" or "both"."""
    tokens, parents = list(tree.tokens), list(tree.parents)
    scores = list(tree.scores)
    sources = ["root"] + ["head"] * (len(tokens) - 1)
    node, step = 0, math.log(hit_rate)
    for depth, token in enumerate(chain, 1):
        child = next((c for c in tree.children[node] if tokens[c] == token), None) if node < len(tree) else None
        if child is not None:  # the head drafted it too
            scores[child] = max(scores[child], depth * step)
            sources[child] = "both"
        else:
            tokens.append(token)
            parents.append(node)
            scores.append(depth * step)
            sources.append("copy")
            child = len(tokens) - 1
        node = child
    return DraftTree.from_parents(tokens, parents, scores, sources).best(budget)
