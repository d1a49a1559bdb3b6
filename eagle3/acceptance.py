"""Lossless acceptance of a verified draft tree, greedy and sampled.

Greedy: follow the child whose token is the target's argmax at its parent, as far as it
goes; the target's argmax after the last accepted node comes for free.

Sampled: the tree is drafted deterministically (top-k), so each tried child x is a
one-hot proposal. At the accepted node with target distribution p, try its children in
order of draft score: accept x with probability p(x); on rejection set p(x) = 0 and
renormalise. If every child is rejected, draw from the residual p. The emitted token is
distributed exactly as p, whatever the draft proposed.

The walk itself runs on the host, over what one read brings from the device: the argmax at
every node (greedy), or every node's draws (sampled, `sampled_draws`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import torch

from eagle3 import transfer
from eagle3.checks import integer_in, number
from eagle3.tree import DraftTree


class TokenState(str, Enum):
    ACCEPTED = "accepted"  # drafted by the head, accepted by the target
    REJECTED = "rejected"  # drafted by the head, refused by the target (not in the output)
    RESAMPLED = "resampled"  # drawn by the target after its drafts were rejected
    BONUS = "bonus"  # drawn by the target with no draft to check: after a fully accepted
    # path, at prefill, and for every token of plain decoding


@dataclass
class SamplingConfig:
    temperature: float = 0.0  # 0 is greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 keeps the whole vocabulary

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def validate(self) -> None:
        number("temperature", self.temperature)
        number("top_p", self.top_p)
        integer_in("sampling top_k", self.top_k, 0, 1 << 31, " (0 keeps the whole vocabulary)")
        if not 0 <= self.temperature <= 100:
            raise ValueError(f"temperature: {self.temperature} is outside [0, 100] (0 is greedy)")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p: {self.top_p} is outside (0, 1]")


def target_probs(logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    """[n, V] logits -> [n, V] float32 probabilities after temperature, top-k and top-p."""
    logits = logits.float() / sampling.temperature
    if 0 < sampling.top_k < logits.shape[-1]:
        kth = logits.topk(sampling.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if sampling.top_p < 1:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        probs = probs.scatter(-1, order, sorted_probs.masked_fill(beyond_nucleus(sorted_probs, sampling.top_p), 0.0))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def beyond_nucleus(sorted_probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Which of probabilities [..., k], in descending order, top-p drops: a token goes when
    the tokens strictly more likely already cover top_p."""
    return sorted_probs.cumsum(dim=-1) - sorted_probs >= top_p


def nucleus(logits: torch.Tensor, sampling: SamplingConfig, candidates: int = 1024):
    """target_probs' distribution over the `candidates` most likely tokens of each row of
    logits [n, V], when its top-p nucleus lies among them: (probs [n, c], token ids [n, c],
    covered [n] bool); rows not covered must use target_probs. The same distribution at a
    fraction of a full sort's cost, for top-p without top-k."""
    probs = torch.softmax(logits.float() / sampling.temperature, dim=-1)
    top, ids = probs.topk(min(candidates, probs.shape[-1]), dim=-1)  # descending
    covered = top.cumsum(dim=-1)[:, -1] >= sampling.top_p  # every later token is dropped too
    kept = top.masked_fill(beyond_nucleus(top, sampling.top_p), 0.0)
    return kept / kept.sum(dim=-1, keepdim=True), ids, covered


def sample_rows(logits: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row of logits [n, V] from target_probs' distribution: [n]. With top-p
    and no top-k, rows whose nucleus lies among the top candidates sample among those."""
    if 0 < sampling.top_p < 1 and sampling.top_k == 0:
        probs, ids, covered = nucleus(logits, sampling)
        tokens = ids.gather(-1, torch.multinomial(probs, 1, generator=generator))[:, 0]
        if covered.all():
            return tokens
        rest = (~covered).nonzero()[:, 0]
        tokens[rest] = torch.multinomial(target_probs(logits[rest], sampling), 1, generator=generator)[:, 0]
        return tokens
    return torch.multinomial(target_probs(logits, sampling), 1, generator=generator)[:, 0]


def choose_among(probs: list[float], uniforms: list[float], residual_empty: bool = False) -> int | None:
    """One node's acceptance step over its children, tried in order: child i, whose token has
    target probability probs[i], is accepted when uniforms[i] < probs[i] / (1 - the earlier
    children's probabilities), its probability once those are removed and the rest
    renormalised. Returns the accepted child's index, or None: the caller then emits the
    residual draw. With residual_empty (the children hold all the probability) the last child
    is certain, whatever rounding says."""
    remaining = 1.0
    for index, (p, u) in enumerate(zip(probs, uniforms)):
        if u * remaining < p or (residual_empty and index == len(probs) - 1):
            return index
        remaining -= p
    return None


@dataclass
class Acceptance:
    path: list[int]  # accepted node indices, root excluded, in root-to-leaf order
    next_token: int  # the target's token after the path
    next_state: TokenState  # RESAMPLED after a rejection, BONUS at a leaf
    rejected: list[int]  # nodes tried and refused where the walk stopped, in try order


def accept_greedy(tree: DraftTree, predicted: list[int]) -> Acceptance:
    """predicted[v]: the target's argmax at tree node v."""
    node, path = 0, []
    while True:
        children = tree.children[node]
        match = next((c for c in children if tree.tokens[c] == predicted[node]), None)
        if match is None:
            state = TokenState.RESAMPLED if children else TokenState.BONUS
            return Acceptance(path, predicted[node], state, children)
        path.append(match)
        node = match


@dataclass
class SampledDraws:
    """Per tree node v, what a sampled walk may use at v, drawn before the walk."""

    child_probs: list[float]  # the target's probability of v's token at v's parent (root: 0)
    uniforms: list[float]  # U[0, 1): v's acceptance test
    residual: list[float]  # a token (as a float) drawn from v's distribution without its children's tokens
    residual_probs: list[float]  # that token's probability; 0: the children hold all of it


def sampled_draws(probs: torch.Tensor, tree: DraftTree, generator: torch.Generator | None) -> torch.Tensor:
    """Every draw a walk of `tree` may use, made on the device so that the walk needs one read:
    [4, n] float64, the fields of SampledDraws in order. probs [n, V]: the target's processed
    distribution at each node."""
    device, n = probs.device, len(tree)
    parents, tokens = transfer.to_device([[max(p, 0) for p in tree.parents], tree.tokens], device)
    child_probs = probs[parents, tokens].double()
    child_probs[0] = 0.0
    uniforms = torch.rand(n, generator=generator, device=device, dtype=torch.float64)
    # An exponential race, argmax p / E with E ~ Exp(1), draws a token distributed as p
    # (as torch.multinomial does for one sample, without its check that waits for the
    # device). One race serves every node: the walk uses one node's residual, and which one
    # the uniforms alone decide.
    race = probs / torch.empty(probs.shape[-1], device=device).exponential_(generator=generator).clamp_min(
        torch.finfo(torch.float32).tiny)
    race[parents[1:], tokens[1:]] = -1.0  # each node's children's tokens leave its residual
    residual = race.argmax(-1)
    residual_probs = probs.gather(1, residual[:, None])[:, 0]
    return torch.stack([child_probs, uniforms, residual.double(), residual_probs.double()])


def accept_sampled(tree: DraftTree, draws: SampledDraws) -> Acceptance:
    """Walk the tree with the draws that sampled_draws made for it."""
    node, path = 0, []
    while True:
        children = tree.children[node]
        index = choose_among([draws.child_probs[c] for c in children], [draws.uniforms[c] for c in children],
                             draws.residual_probs[node] == 0)
        if index is None:
            state = TokenState.RESAMPLED if children else TokenState.BONUS
            return Acceptance(path, int(draws.residual[node]), state, children)
        path.append(children[index])
        node = children[index]
