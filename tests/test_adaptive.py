"""Adaptive draft depth: lossless, and it follows acceptance and measured costs."""

import torch

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, collect, decode
from eagle3.adaptive import AdaptiveDepth
from tests.models import make_head, make_target
from tests.test_greedy import random_prompts, reference


def test_adaptive_decoding_is_lossless():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    for prompt in random_prompts(10, target.vocab_size, seed=4):
        policy = AdaptiveDepth(1, 8)
        events = list(decode(target, prompt, HeadDrafter(head, TreeConfig(4, 3, 13), policy), GenerationConfig(40)))
        assert collect(events).output_ids == reference(target, prompt, 40)
        assert len(policy.history) == len(events) - 1  # one depth per verification round
        assert all(e.depth <= d for e, d in zip(events[1:], policy.history))  # the tree is at most as deep as drafted
        assert all(1 <= d <= 8 for d in policy.history[:-1])


def simulate(policy: AdaptiveDepth, accept_rate: float, seconds_per_level: float, rounds: int = 200, seed: int = 0):
    """Rounds where each position is accepted with accept_rate; cost = 1 + seconds_per_level * depth."""
    generator = torch.Generator().manual_seed(seed)
    for _ in range(rounds):
        depth = policy.depth
        accepted = 0
        while accepted < depth and torch.rand((), generator=generator) < accept_rate:
            accepted += 1
        policy.observe(depth, accepted, 1.0 + seconds_per_level * depth)
    return policy.depth


def test_depth_grows_with_acceptance_and_shrinks_without():
    assert simulate(AdaptiveDepth(1, 10), accept_rate=1.0, seconds_per_level=0.1) == 10
    assert simulate(AdaptiveDepth(1, 10), accept_rate=0.0, seconds_per_level=0.1) == 1


def test_depth_follows_measured_cost():
    cheap = simulate(AdaptiveDepth(1, 10), accept_rate=0.8, seconds_per_level=0.02)
    dear = simulate(AdaptiveDepth(1, 10), accept_rate=0.8, seconds_per_level=1.0)
    assert cheap > dear


def test_tree_budget_scales_with_depth():
    policy = AdaptiveDepth(1, 10)
    policy.depth = 3
    assert policy.tree(TreeConfig(6, 4, 25)) == TreeConfig(3, 4, 13)
    policy.depth = 10
    assert policy.tree(TreeConfig(6, 4, 25)) == TreeConfig(10, 4, 25)
