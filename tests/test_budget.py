"""The node budget (eagle3.budget): the verification curve, the cut, and that cut trees stay lossless."""

import math
import random

import pytest

import eagle3.budget
from eagle3 import GenerationConfig, TreeConfig, collect, decode
from eagle3.budget import NodeBudget, VerifyCosts, measure_verify_costs, node_budget
from eagle3.drafters import drafter_named
from eagle3.stats import collect_rows
from eagle3.kv_cache import KVCache
from eagle3.tree import MAX_DEPTH, NO_FLOOR, DraftLimits, DraftTree, draft_trees
from tests.models import make_head, make_target, random_pairs
from tests.test_greedy import random_prompts
from tests.test_invariant import path_to

FLAT = VerifyCosts((1, 64), (1.0, 1.0))  # nodes cost nothing: keep every draft
STEEP = VerifyCosts((1, 2, 4, 8), (1.0, 1.5, 2.5, 4.5))  # each node half a step: keep only the likely ones
MILD = VerifyCosts((1, 16, 32), (1.0, 1.3, 2.0))  # as on a CPU with AMX


def test_the_curve_is_read_between_and_beyond_its_points():
    costs = VerifyCosts((1, 4, 16), (1.0, 1.3, 2.5))
    assert [costs.at(n) for n in (1, 4, 16)] == [1.0, 1.3, 2.5]
    assert costs.at(10) == pytest.approx(1.3 + 6 * 1.2 / 12)  # straight between 4 and 16
    assert costs.at(32) == pytest.approx(2.5 + 16 * 0.1)  # the last segment's slope beyond
    assert costs.at(0) == 1.0  # never below a plain step
    assert costs.in_steps() == [1.0, 1.3, 2.5]


def chain(scores: list[float], sources=None) -> DraftTree:
    return DraftTree.from_parents(list(range(len(scores) + 1)), list(range(-1, len(scores))), [0.0] + scores, sources)


def test_the_cut_keeps_what_pays_for_itself():
    likely = chain([math.log(0.9), math.log(0.8), math.log(0.7), math.log(0.1), math.log(0.01)])
    assert NodeBudget(FLAT).size([NodeBudget(FLAT).chances(likely)], 0.0) == 5
    steep = NodeBudget(STEEP)
    assert steep.size([steep.chances(likely)], 0.0) == 3  # the 0.1 and 0.01 nodes cost more than they bring
    # A long draft makes each node relatively cheaper (the 0.1 node joins). Of worthless drafts only the best
    # is verified, which keeps the calibration learning; with nothing drafted, nothing is.
    assert steep.size([steep.chances(likely)], 100.0) == 4
    assert steep.size([steep.chances(chain([-30.0, -31.0]))], 0.0) == 1
    assert steep.size([steep.chances(chain([]))], 0.0) == 0
    # Rows of a batch share one size, priced at the batch's token count.
    assert steep.size([steep.chances(likely)] * 4, 0.0) < 3


def random_tree(rng: random.Random, n: int) -> DraftTree:
    parents, scores, sources = [-1], [0.0], ["root"]
    for node in range(1, n):
        parent = rng.randrange(node)
        parents.append(parent)
        scores.append(scores[parent] + math.log(rng.uniform(0.05, 1.0)))
        sources.append(rng.choice(["head", "copy", "both"]))
    return DraftTree.from_parents(list(range(n)), parents, scores, sources)


def test_cut_trees_keep_every_parent_whatever_the_calibration():
    rng = random.Random(0)
    depths = range(1, 30)
    budget = NodeBudget(STEEP, accepted={**{("head", d): 0.5 for d in depths}, **{("copy", d): 9.0 for d in depths}},
                        predicted={**{("head", d): 4.0 for d in depths}, **{("copy", d): 1.0 for d in depths}})
    assert budget.calibration("copy", 3) > 1 > budget.calibration("head", 3)  # copies valued above their scores
    for _ in range(200):
        tree = random_tree(rng, rng.randrange(2, 30))
        chances = budget.chances(tree)
        assert all(chances[node] <= chances[parent] for node, parent in enumerate(tree.parents) if parent >= 0)
        for n in range(len(tree)):
            cut = tree.best(n, chances)
            assert len(cut) == n + 1
            kept = {(tuple(cut.tokens[a] for a in path_to(cut, node))) for node in range(len(cut))}
            assert kept <= {tuple(tree.tokens[a] for a in path_to(tree, node)) for node in range(len(tree))}


def test_calibration_follows_what_the_target_accepts():
    from eagle3.decoding import Settled

    budget = NodeBudget(FLAT)
    tree = chain([math.log(0.8), math.log(0.4)], ["root", "head", "copy"])
    for _ in range(40):  # the target accepts both drafts: each was undervalued, the copy more
        budget.observe([Settled(tree, [1, 2], None, [], [])])
    assert 1.2 < budget.calibration("head", 1) < 1.25 and 2.1 < budget.calibration("copy", 2) < 2.5
    # Where nothing was drafted, a depth takes the calibration of the one above it (1 above the first)
    assert budget.calibration("head", 2) == budget.calibration("head", 1) and budget.calibration("copy", 1) == 1.0
    for _ in range(40):
        budget.observe([Settled(tree, [], None, [], [])])
    assert budget.calibration("head", 1) < 0.15 and budget.calibration("copy", 2) < 0.25  # (shrunk toward 1 above)


@pytest.mark.parametrize("drafter", ["eagle3", "hybrid"])
def test_budgeted_greedy_decoding_equals_plain(drafter):
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    config = GenerationConfig(max_new_tokens=40)
    sizes = set()
    for prompt in random_prompts(12, target.vocab_size, seed=2):
        prompt = prompt * 2  # repeats, so copies are drafted too
        budget = NodeBudget(MILD)
        got = collect(decode(target, prompt, drafter_named(drafter, head, TreeConfig(4, 4, 16), budget=budget), config))
        assert got.output_ids == collect(decode(target, prompt, None, config)).output_ids, prompt
        assert got.nodes == budget.history
        sizes |= set(budget.history)
    assert len(sizes) > 2  # the cut did vary


def test_the_head_drafts_one_level_deeper_than_it_was_kept():
    budget = NodeBudget(STEEP)
    assert budget.limits().levels == MAX_DEPTH  # nothing kept yet: the tree's own depth
    likely = chain([math.log(0.9), math.log(0.8), math.log(0.7), math.log(0.1), math.log(0.01)])
    budget.cut([likely], 0.1)  # keeps the three likely levels
    assert budget.limits().levels == 4
    budget.cut([chain([math.log(0.9)] * 2, ["root", "copy", "copy"])], 0.0)  # copies alone: the head did not draft
    assert budget.limits().levels == 4
    for _ in range(budget.depth_window):
        budget.cut([chain([math.log(0.9), math.log(0.05)])], 0.1)
    assert budget.limits().levels == 2  # the deep round has left the window


def test_the_floors_bound_the_chance_of_any_node_at_the_price():
    """A node scoring under its depth's floor has a chance under the price of a further node,
    whatever its ancestors: the head need not draft the depth where its frontier is below."""
    from eagle3.decoding import Settled

    budget = NodeBudget(STEEP)
    assert budget.limits().floors == ()  # nothing priced yet: no floors
    likely = chain([math.log(0.9), math.log(0.8), math.log(0.7), math.log(0.1), math.log(0.01)])
    for _ in range(5):  # the first draft is accepted more often than predicted, the second less
        budget.observe([Settled(chain([math.log(0.5), math.log(0.5)]), [1], None, [], [])])
    assert budget.calibration("head", 1) > 1 > budget.calibration("head", 2)
    budget.cut([likely], 0.1)
    rates = budget.rates([budget.chances(likely)], 0.1)
    n = budget.size([budget.chances(likely)], 0.1)
    assert budget.price == pytest.approx(rates[n] * (STEEP.at(n + 2) - STEEP.at(n + 1)))
    assert 0.1 < budget.price < 0.7  # the 0.1 node was not worth its verification, the 0.7 one was
    limits = budget.limits()
    assert limits.floors[0] == NO_FLOOR and len(limits.floors) == limits.levels + 1
    for depth in range(1, limits.levels + 1):
        below = chain([0.0] * (depth - 1) + [limits.floors[depth] - 1e-9])
        assert budget.chances(below)[-1] < budget.price
        at = chain([0.0] * (depth - 1) + [limits.floors[depth] + 1e-9])
        assert budget.chances(at)[-1] > budget.price
    budget.floors = False  # as on a GPU, where reading each level's scores would wait for it
    assert budget.limits().floors == () and budget.limits().levels == limits.levels
    assert node_budget("measured", make_target("llama", vocab_size=32), GenerationConfig(8)).floors  # a CPU target


def test_a_floor_stops_the_draft_where_no_deeper_node_would_pay():
    target = make_target("llama", vocab_size=32)
    head = make_head(target, draft_vocab_size=24)
    features, tokens = random_pairs(target, 6, seed=4)
    config = TreeConfig(4, 3, 30)

    def drafted(limits: DraftLimits) -> DraftTree:
        return draft_trees(head, KVCache(1, 64), [0], [features], [tokens], config, limits)[0]

    full = drafted(DraftLimits())
    assert full.depth == 4
    unreachable = DraftLimits(4, (NO_FLOOR, NO_FLOOR, NO_FLOOR, 1.0))  # no score reaches log 1 + 1
    assert drafted(unreachable).depth == 2
    assert drafted(DraftLimits(4, (NO_FLOOR,) * 3 + (-1e9,))).tokens == full.tokens  # floors under every score
    frontier_best = max(full.scores[node] for node in range(len(full)) if full.depths[node] == 2)
    assert drafted(DraftLimits(4, (NO_FLOOR,) * 3 + (frontier_best - 1e-6,))).depth == 4
    assert drafted(DraftLimits(4, (NO_FLOOR,) * 3 + (frontier_best + 1e-6,))).depth == 2


def test_the_head_rests_while_it_does_not_pay_and_drafts_again_once_it_does():
    costly = VerifyCosts((1, 2, 4, 8), (1.0, 1.8, 3.4, 6.6))  # each node 0.8 steps: only near-certain drafts pay
    budget = NodeBudget(costly)

    def rounds(count: int, tree: DraftTree, draft_seconds: float) -> str:
        """x for a round the head drafted, . for one it rested"""
        drafted = ""
        for _ in range(count):
            levels = budget.limits().levels
            drafted += "x" if levels else "."
            budget.cut([tree if levels else DraftTree.root_only(7)], draft_seconds if levels else 0.0)
        return drafted

    weak = rounds(80, chain([math.log(0.5), math.log(0.2)]), 0.2)
    assert [len(rest) for rest in weak.split("x")[1:-1]] == [1, 2, 4, 8, 16, 16, 16], weak  # doubling
    easy = rounds(60, chain([math.log(0.999)] * 8), 0.1)  # the text turns easy: a probe or two reopen the gate
    assert easy.endswith("x" * 20) and budget.head_ratio > 1, easy
    # Where nodes are nearly free, even a weak head pays and never rests.
    cheap = NodeBudget(MILD)
    for _ in range(20):
        assert cheap.limits().levels > 0
        cheap.cut([chain([math.log(0.5), math.log(0.2)])], 0.02)


def test_the_copies_alone_are_what_the_head_must_beat():
    """In a hybrid round the head is weighed against the copy chain without it, not against plain decoding."""
    budget = NodeBudget(STEEP)
    hybrid = DraftTree.from_parents([0, 1, 2, 3, 4], [-1, 0, 1, 0, 3], [0.0, math.log(0.99), 2 * math.log(0.99),
                                    math.log(0.6), 2 * math.log(0.6)], ["root", "copy", "copy", "head", "head"])
    budget.cut([hybrid], 0.5)
    assert budget.head_ratio < 1 and budget.limits().levels == 0
    alone = NodeBudget(STEEP)
    alone.cut([chain([math.log(0.6), 2 * math.log(0.6)])], 0.05)
    assert alone.head_ratio > 1  # the same head nodes beat plain decoding


def test_round_times_scale_the_curve():
    from eagle3.decoding import Settled

    budget = NodeBudget(STEEP)
    tree = budget.cut([chain([math.log(0.9)] * 2)], 0.25)[0]
    budget.observe([Settled(tree, [1, 2], None, [], [])], 0.25 + 2 * STEEP.at(len(tree)))
    assert budget.scale == pytest.approx(2.0)  # rounds take twice the curve's price: a long context, say
    budget.observe([Settled(tree, [1, 2], None, [], [])], 0.25 + STEEP.at(len(tree)))
    assert budget.scale == pytest.approx(budget.memory * 2 + (1 - budget.memory))


class Scripted(NodeBudget):
    """A budget whose head depths follow a script (0: rest), so that every drafter sees rests,
    shallow drafts and catch-ups whatever the timings."""

    script = [0, 0, 3, 1, 0, MAX_DEPTH, 2, 0, 0, 0, 1]

    def levels(self) -> int:
        self.round = getattr(self, "round", -1) + 1
        return self.script[self.round % len(self.script)]


@pytest.mark.parametrize("drafter", ["eagle3", "hybrid"])
def test_rests_and_shallow_drafts_stay_lossless(drafter):
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    config = GenerationConfig(max_new_tokens=40)
    prompts = [prompt * 2 for prompt in random_prompts(6, target.vocab_size, seed=3)]
    plain = [collect(decode(target, prompt, None, config)).output_ids for prompt in prompts]
    for prompt, expected in zip(prompts, plain):
        budget = Scripted(FLAT)
        got = collect(decode(target, prompt, drafter_named(drafter, head, TreeConfig(4, 4, 16), budget=budget), config))
        assert got.output_ids == expected, prompt
        if drafter == "eagle3":  # a resting head's rounds are plain steps
            assert 1 in budget.history and max(budget.history) > 2
    batch = decode(target, prompts, drafter_named(drafter, head, TreeConfig(4, 4, 16), budget=Scripted(FLAT)), config)
    assert [row.output_ids for row in collect_rows(batch)] == plain


def test_the_curve_is_measured_once_per_model(monkeypatch):
    target = make_target("llama", vocab_size=32)
    eagle3.budget._MEASURED.clear()
    costs = measure_verify_costs(target, nodes=(1, 4), context=8, repeats=1)
    assert costs.nodes == (1, 4) and min(costs.seconds) > 0
    monkeypatch.setattr(type(target), "forward", lambda *a, **k: pytest.fail("measured twice"))
    assert measure_verify_costs(target, nodes=(1, 4), context=8, repeats=1) is costs


def test_a_seeded_sampled_decode_keeps_the_fixed_tree():
    """The cut follows timings, so with it a seed would not reproduce a sampled run."""
    from eagle3 import SamplingConfig
    from eagle3.budget import node_budget

    target = make_target("llama", vocab_size=32)
    sampled = SamplingConfig(temperature=0.8)
    assert isinstance(node_budget("measured", target, GenerationConfig()), NodeBudget)
    assert isinstance(node_budget("measured", target, GenerationConfig(sampling=sampled)), NodeBudget)  # no seed
    assert node_budget("measured", target, GenerationConfig(sampling=sampled, seed=3)) is None
    assert node_budget("fixed", target, GenerationConfig()) is None
    with pytest.raises(ValueError, match="node budget: 'some' is not one of measured, fixed"):
        node_budget("some", target, GenerationConfig())
