"""Context drafting and hybrid trees: the index, the merge, and losslessness of both drafters."""

import pytest
import torch

import eagle3.decoding
from eagle3 import GenerationConfig, SamplingConfig, TreeConfig, collect, decode, drafter_named
from eagle3.lookup import ContextIndex, LookupConfig, hybrid_tree
from eagle3.kv_cache import KVCache
from eagle3.tree import DraftTree, draft_tree
from tests.models import make_head, make_target, random_pairs, sampling_pair
from tests.test_greedy import random_prompts, reference
from tests.test_sampling import VOCAB, chi_square_pvalue, exact_joint, sample_first_tokens


def test_the_index_copies_what_followed_the_longest_earlier_ending():
    index = ContextIndex([5, 6, 7, 8, 1, 6, 7, 9, 2], LookupConfig(max_ngram=3))
    index.extend([6, 7])  # ends "6 7": its latest earlier occurrence was followed by 9 2 6 7
    assert index.propose(3) == [9, 2, 6]
    index.extend([8])  # ends "6 7 8", as at the start, which 1 6 7 9 followed
    assert index.propose(4) == [1, 6, 7, 9]
    assert ContextIndex([1, 2, 3], LookupConfig(max_ngram=2, min_ngram=2)).propose(5) == []  # "2 3" never recurs
    incremental = ContextIndex([4, 4], LookupConfig())
    incremental.extend([1, 4, 2, 4, 1])
    assert incremental.ends == ContextIndex([4, 4, 1, 4, 2, 4, 1], LookupConfig()).ends


def tree_of(tokens, parents, scores):
    return DraftTree.from_parents(tokens, parents, scores)


def test_a_copy_chain_merges_under_the_root_within_the_budget():
    head = tree_of([0, 10, 11, 12, 13], [-1, 0, 0, 1, 3], [0.0, -0.1, -2.0, -0.3, -0.5])
    merged = hybrid_tree(head, [10, 12, 20, 21], hit_rate=0.9, budget=5)
    nodes = list(zip(merged.tokens, merged.parents, merged.sources))
    # 10 and 12 were drafted by both; 20 and 21 are new, under 12; the head's 11 (-2.0) makes way
    assert nodes == [(0, -1, "root"), (10, 0, "both"), (12, 1, "both"), (13, 2, "head"), (20, 2, "copy"),
                     (21, 4, "copy")]
    assert len(hybrid_tree(head, [30, 31, 32], hit_rate=0.01, budget=4)) == 5  # an unlikely chain loses its nodes
    assert hybrid_tree(head, [30, 31, 32], hit_rate=0.01, budget=4).sources.count("copy") == 0
    only = hybrid_tree(DraftTree.root_only(0), [7, 8], hit_rate=0.5, budget=2)
    assert only.tokens == [0, 7, 8] and only.parents == [-1, 0, 1]


@pytest.mark.parametrize("drafter", ["lookup", "hybrid"])
def test_greedy_copy_drafting_is_token_exact(drafter):
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    prompts = random_prompts(4, target.vocab_size, seed=21)
    prompts += [p * 3 for p in random_prompts(3, target.vocab_size, seed=22)]  # repeats, for long copies
    copied = 0
    for prompt in prompts:
        events = list(decode(target, prompt, drafter_named(drafter, head if drafter == "hybrid" else None, TreeConfig(4, 3, 12)), GenerationConfig(30)))
        assert collect(events).output_ids == reference(target, prompt, 30)
        copied += sum(t.source in ("copy", "both") for e in events for t in e.tokens if t.state.value == "accepted")
    assert copied > 0  # the copy path ran and was accepted


def test_the_head_sits_out_rounds_that_copy_whole_chains():
    """A prompt repeated three times: the target goes on repeating it, copies are accepted
    whole, and the head leaves those rounds to the copy chain (the tree has no head nodes
    although its budget would hold them); the output stays exact."""
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    copy_only = 0
    for prompt in [p * 3 for p in random_prompts(4, target.vocab_size, seed=22)]:
        events = list(decode(target, prompt, drafter_named("hybrid", head, TreeConfig(4, 3, 16)), GenerationConfig(40)))
        assert collect(events).output_ids == reference(target, prompt, 40)
        copy_only += sum(bool(e.tree and e.tree.sources) and set(e.tree.sources[1:]) == {"copy"} for e in events)
    assert copy_only > 0


def test_the_head_catches_up_on_pairs_it_skipped():
    """Pairs consumed over two drafting calls give the tree that one call over all of them gives."""
    target = make_target("llama", vocab_size=32)
    head = make_head(target, draft_vocab_size=24)
    features, tokens = random_pairs(target, 20, seed=4)
    config = TreeConfig(3, 3, 10)
    once = draft_tree(head, KVCache(1, 64), features, tokens, config)
    cache = KVCache(1, 64)
    draft_tree(head, cache, features[:12], tokens[:12], config)
    twice = draft_tree(head, cache, features[12:], tokens[12:], config)
    assert once.tokens == twice.tokens and once.parents == twice.parents
    torch.testing.assert_close(torch.tensor(once.scores), torch.tensor(twice.scores))


@pytest.fixture(scope="module")
def pair():
    return sampling_pair(VOCAB)


REPEATING = [3, 1, 4, 1, 3, 4, 1]  # every token recurs: a copy chain is proposed at once


@pytest.mark.parametrize("drafter", ["lookup", "hybrid"])
def test_sampled_copy_drafting_follows_the_target(pair, drafter):
    target, head = pair
    sampling = SamplingConfig(temperature=1.0)
    counts = sample_first_tokens(target, head, sampling, n=2000, prompt=REPEATING, drafter=drafter)
    assert chi_square_pvalue(counts, exact_joint(target, sampling, prompt=REPEATING)) > 1e-3


def test_a_copy_chain_accepted_without_checking_is_caught(pair, monkeypatch):
    """Negative control: accepting the copy chain's first token as if it were the target's breaks
    the distribution, and the same statistic sees it."""
    target, head = pair
    settle = eagle3.decoding.settle

    def trusting_settle(run, draft, verdict, features):
        if draft.sources and len(draft) > 1 and draft.sources[1] in ("copy", "both"):
            verdict[0][1] = 1.0  # the target "agrees" with the copy: its token has all the probability
        return settle(run, draft, verdict, features)

    monkeypatch.setattr(eagle3.decoding, "settle", trusting_settle)
    sampling = SamplingConfig(temperature=1.0)
    counts = sample_first_tokens(target, head, sampling, n=500, prompt=REPEATING, drafter="lookup")
    assert chi_square_pvalue(counts, exact_joint(target, sampling, prompt=REPEATING)) < 1e-6
