"""Sampled speculative decoding follows the target's distribution exactly."""

import itertools

import pytest
import torch
from scipy.stats import chisquare

import eagle3.decoding
from eagle3 import GenerationConfig, HeadDrafter, SamplingConfig, TreeConfig, collect, decode, drafter_named
from eagle3.acceptance import Acceptance, SampledDraws, TokenState, accept_sampled, sampled_draws, target_probs
from eagle3.budget import NodeBudget, VerifyCosts
from eagle3.tree import DraftTree
from tests.models import sampling_pair

VOCAB = 8
PROMPT = [3, 1, 4]


def test_target_probs_processing():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    p = target_probs(logits, SamplingConfig(temperature=1.0))
    assert torch.allclose(p, torch.softmax(logits, -1))
    p = target_probs(logits, SamplingConfig(temperature=0.5))
    assert torch.allclose(p, torch.softmax(logits / 0.5, -1))
    p = target_probs(logits, SamplingConfig(temperature=1.0, top_k=2))
    assert torch.allclose(p, torch.tensor([[0.7311, 0.2689, 0.0, 0.0]]), atol=1e-4)
    full = torch.softmax(logits, -1)[0]  # [0.644, 0.237, 0.087, 0.032]
    p = target_probs(logits, SamplingConfig(temperature=1.0, top_p=0.85))  # 0.644 < 0.85 <= 0.881
    assert torch.allclose(p[0], torch.cat([full[:2] / full[:2].sum(), torch.zeros(2)]), atol=1e-6)
    p = target_probs(logits, SamplingConfig(temperature=1.0, top_p=0.5))  # the top token alone
    assert torch.equal(p[0], torch.tensor([1.0, 0.0, 0.0, 0.0]))


def walk(tree: DraftTree, probs: torch.Tensor, generator: torch.Generator) -> Acceptance:
    """The decoder's sampled walk: the draws made on the device, read once, walked on the host."""
    return accept_sampled(tree, SampledDraws(*sampled_draws(probs, tree, generator).tolist()))


def accept_one(probs: torch.Tensor, candidates: list[int], generator: torch.Generator) -> tuple[int | None, int]:
    """One node's acceptance step as the decoder takes it: a root whose children carry the
    candidates, in order. Returns (index of the accepted candidate or None, emitted token)."""
    tree = DraftTree.from_parents([0] + candidates, [-1] + [0] * len(candidates),
                                  [0.0] + [-1.0 - i for i in range(len(candidates))])
    result = walk(tree, probs.expand(len(tree), -1), generator)
    if result.path:
        return result.path[0] - 1, candidates[result.path[0] - 1]
    return None, result.next_token


@pytest.mark.parametrize("probs,candidates", [
    ([0.5, 0.2, 0.2, 0.1], [1, 0]),
    ([0.05, 0.05, 0.6, 0.3], [0, 1, 3]),
    ([0.25, 0.25, 0.25, 0.25], [2]),
])
def test_acceptance_step_matches_exact_formula(probs, candidates):
    """Candidate i is accepted with probability p(x_i) and the emitted token is distributed as p."""
    p = torch.tensor(probs)
    generator = torch.Generator().manual_seed(0)
    n = 40000
    accepted = torch.zeros(len(candidates) + 1)
    emitted = torch.zeros(len(probs))
    for _ in range(n):
        index, token = accept_one(p, candidates, generator)
        accepted[len(candidates) if index is None else index] += 1
        emitted[token] += 1
    exact_accept = torch.tensor([probs[c] for c in candidates] + [1 - sum(probs[c] for c in candidates)])
    for observed, exact in ((accepted / n, exact_accept), (emitted / n, p)):
        sigma = (exact * (1 - exact) / n).sqrt()
        assert ((observed - exact).abs() <= 4.5 * sigma + 1e-9).all(), (observed, exact)


def exact_joint(target, sampling: SamplingConfig, length: int = 3, prompt=PROMPT) -> torch.Tensor:
    """P(first `length` generated tokens) from the target, by enumeration: [VOCAB ** length]."""
    joint = torch.ones(1)
    for step in range(length):
        prefixes = [list(s) for s in itertools.product(range(VOCAB), repeat=step)]
        ids = torch.tensor([prompt + s for s in prefixes])
        with torch.no_grad():
            logits = target.model(ids).logits[:, -1]
        p = target_probs(logits, sampling)  # [VOCAB ** step, VOCAB]
        joint = (joint[:, None] * p).flatten()
    return joint


def sample_first_tokens(target, head, sampling, n, tree=TreeConfig(2, 3, 8), length=3, prompt=PROMPT, drafter="eagle3",
                        costs=None):
    """Counts of the first `length` tokens over n seeded decodes; with costs, each decode's trees
    are cut by a NodeBudget over that curve."""
    counts = torch.zeros(VOCAB ** length)
    for seed in range(n):
        budget = NodeBudget(costs) if costs else None
        events, ids = decode(target, prompt, drafter_named(drafter, head, tree, budget=budget),
                             GenerationConfig(64, sampling, seed=seed)), []
        for event in events:
            ids += event.output_ids
            if len(ids) >= length:
                break
        ids = ids[:length]
        counts[sum(t * VOCAB ** (length - 1 - i) for i, t in enumerate(ids))] += 1
        events.close()
    return counts


def chi_square_pvalue(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = probs * counts.sum()
    big = expected >= 5  # lump the rare outcomes into one bin
    observed = torch.cat([counts[big], counts[~big].sum(0, keepdim=True)])
    expected = torch.cat([expected[big], expected[~big].sum(0, keepdim=True)])
    return float(chisquare(observed.numpy(), expected.numpy() * observed.sum().item() / expected.sum().item()).pvalue)


@pytest.fixture(scope="module")
def pair():
    return sampling_pair(VOCAB)


@pytest.mark.parametrize("sampling", [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.7, top_p=0.9)])
def test_sampled_output_follows_target_distribution(pair, sampling):
    target, head = pair
    counts = sample_first_tokens(target, head, sampling, n=2500)
    assert chi_square_pvalue(counts, exact_joint(target, sampling)) > 1e-3


def test_trees_cut_by_a_node_budget_keep_the_distribution(pair):
    target, head = pair
    sampling = SamplingConfig(temperature=1.0)
    counts = sample_first_tokens(target, head, sampling, n=2500, costs=VerifyCosts((1, 8), (1.0, 1.5)))
    assert chi_square_pvalue(counts, exact_joint(target, sampling)) > 1e-3


def test_wrong_acceptance_rule_is_caught(pair, monkeypatch):
    """The same statistic rejects a decoder that always accepts the draft's first child."""
    target, head = pair

    def always_accept(tree, draws):
        node, path = 0, []
        while tree.children[node]:
            node = tree.children[node][0]
            path.append(node)
        return Acceptance(path, int(draws.residual[node]), TokenState.BONUS, [])

    monkeypatch.setattr(eagle3.decoding, "accept_sampled", always_accept)
    sampling = SamplingConfig(temperature=1.0)
    counts = sample_first_tokens(target, head, sampling, n=500)
    assert chi_square_pvalue(counts, exact_joint(target, sampling)) < 1e-6


def test_seeded_sampling_is_reproducible(pair):
    target, head = pair
    config = GenerationConfig(20, SamplingConfig(temperature=1.0), seed=7)
    runs = [collect(decode(target, PROMPT, HeadDrafter(head, TreeConfig(3, 3, 10)), config)).output_ids for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) == 20


def test_nucleus_over_the_top_candidates_is_target_probs():
    from eagle3.acceptance import nucleus, sample_rows

    torch.manual_seed(0)
    logits = torch.randn(6, 500) * torch.tensor([0.5, 1, 2, 4, 8, 16])[:, None]  # flat to peaked rows
    for top_p in (0.5, 0.9, 0.95):
        sampling = SamplingConfig(temperature=0.8, top_p=top_p)
        probs, ids, covered = nucleus(logits, sampling, candidates=64)
        assert covered.any() and not covered.all()  # the flattest rows need more than 64 candidates
        full = target_probs(logits, sampling)
        dense = torch.zeros_like(full).scatter(-1, ids, probs)
        assert torch.allclose(dense[covered], full[covered], atol=1e-6)
    # sample_rows draws from target_probs: empirical frequencies over many draws of one row each kind
    sampling = SamplingConfig(temperature=1.0, top_p=0.9)
    rows = logits[[0, 4]].repeat_interleave(4000, dim=0)
    draws = sample_rows(rows, sampling, torch.Generator().manual_seed(1))
    for kind, row in enumerate((0, 4)):
        counts = torch.bincount(draws[kind * 4000 : (kind + 1) * 4000], minlength=500).float() / 4000
        assert (counts - target_probs(logits[row : row + 1], sampling)[0]).abs().max() < 0.03
