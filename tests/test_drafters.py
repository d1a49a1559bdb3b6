"""The drafters' protocol: names, and the head's pairs accounted for whatever the policy."""

import pytest

from eagle3 import CopyDrafter, GenerationConfig, HeadDrafter, HybridDrafter, TreeConfig, collect, decode, drafter_named
from eagle3.drafters import Drafter
from tests.models import make_head, make_target
from tests.test_greedy import random_prompts, reference


def test_drafters_by_name():
    target = make_target("llama", vocab_size=32)
    head = make_head(target, draft_vocab_size=24)
    kinds = {name: type(drafter_named(name, head, TreeConfig(3, 2, 6))) for name in ("plain", "eagle3", "lookup", "hybrid")}
    assert kinds == {"plain": Drafter, "eagle3": HeadDrafter, "lookup": CopyDrafter, "hybrid": HybridDrafter}
    assert type(drafter_named("lookup")) is CopyDrafter  # no head needed
    with pytest.raises(ValueError, match="drafter: hybrid needs an EAGLE-3 head"):
        drafter_named("hybrid")
    with pytest.raises(ValueError, match="drafter: 'medusa' is not one of plain, eagle3, lookup, hybrid"):
        drafter_named("medusa", head)
    with pytest.raises(ValueError, match="top_k: 30 exceeds the head's draft vocabulary of 24"):
        HeadDrafter(head, TreeConfig(4, 30, 40))


class Accounted(HybridDrafter):
    """After every round: the pairs the head consumed plus those waiting for it are every
    position in the target's cache, whether the head drafted the round or sat it out."""

    def start(self, prompts, capacity):
        super().start(prompts, capacity)
        self.positions, self.sat_out = [len(p) for p in prompts], 0

    def observe(self, settled, seconds):
        super().observe(settled, seconds)
        self.sat_out += self.head.drafted is None and settled[0].tree is not None
        for b, done in enumerate(settled):
            self.positions[b] += 0 if done.tree is None else len(done.kept)
            assert self.head.lengths[b] + len(self.head.next_tokens[b]) == self.positions[b]


def test_the_head_s_pairs_are_all_accounted_for_when_it_sits_rounds_out():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    sat_out = 0
    for prompt in [p * 3 for p in random_prompts(4, target.vocab_size, seed=22)]:
        drafter = Accounted(HeadDrafter(head, TreeConfig(4, 3, 16)), CopyDrafter())
        assert collect(decode(target, prompt, drafter, GenerationConfig(40))).output_ids == reference(target, prompt, 40)
        sat_out += drafter.sat_out
    assert sat_out > 0  # the policy ran
