"""Property tests (hypothesis) on the acceptance and tree code."""

import torch
from hypothesis import given, settings, strategies as st

from eagle3.acceptance import SamplingConfig, accept_greedy, target_probs
from eagle3.tree import DraftTree
from tests.test_sampling import accept_one, walk


@st.composite
def trees(draw, vocab_size=6):
    """A random tree whose siblings carry distinct tokens, nodes in parent-first order."""
    n = draw(st.integers(1, 14))
    parents, tokens, used = [-1], [draw(st.integers(0, vocab_size - 1))], {0: set()}
    for node in range(1, n):
        parent = draw(st.integers(0, node - 1))
        free = [t for t in range(vocab_size) if t not in used[parent]]
        if not free:
            break
        token = draw(st.sampled_from(free))
        used[parent].add(token)
        used[node] = set()
        parents.append(parent)
        tokens.append(token)
    scores = [0.0] + [-float(draw(st.integers(0, 50))) / 10 for _ in parents[1:]]
    return DraftTree.from_parents(tokens, parents, scores)


def is_root_path(tree: DraftTree, path: list[int]) -> bool:
    parent = 0
    for node in path:
        if tree.parents[node] != parent:
            return False
        parent = node
    return True


logits_arrays = st.lists(st.floats(-8, 8, allow_nan=False), min_size=6, max_size=6)


@settings(max_examples=200, deadline=None)
@given(tree=trees(), data=st.data())
def test_greedy_acceptance_is_the_argmax_chain(tree, data):
    logits = torch.tensor([data.draw(logits_arrays) for _ in range(len(tree))])
    result = accept_greedy(tree, logits.argmax(-1).tolist())
    assert is_root_path(tree, result.path)
    chain = [0] + result.path
    for parent, child in zip(chain, chain[1:]):  # every accepted token is the argmax at its parent
        assert tree.tokens[child] == logits[parent].argmax()
    assert result.next_token == int(logits[chain[-1]].argmax())
    stop = chain[-1]
    assert all(tree.tokens[c] != result.next_token for c in tree.children[stop])  # nothing more was acceptable


@settings(max_examples=200, deadline=None)
@given(tree=trees(), data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_sampled_acceptance_returns_a_root_path(tree, data, seed):
    logits = torch.tensor([data.draw(logits_arrays) for _ in range(len(tree))])
    probs = target_probs(logits, SamplingConfig(temperature=1.0, top_p=0.9))
    result = walk(tree, probs, torch.Generator().manual_seed(seed))
    assert is_root_path(tree, result.path)
    last = ([0] + result.path)[-1]
    assert probs[last, result.next_token] > 0  # emitted tokens always have target probability
    assert set(result.rejected) == set(tree.children[last]) or not tree.children[last]


@settings(max_examples=200, deadline=None)
@given(values=logits_arrays, temperature=st.floats(0.05, 3), top_p=st.floats(0.01, 1), top_k=st.integers(0, 6))
def test_processed_probabilities_are_distributions(values, temperature, top_p, top_k):
    probs = target_probs(torch.tensor([values]), SamplingConfig(temperature, top_p, top_k))
    assert torch.isfinite(probs).all() and (probs >= 0).all()
    assert abs(float(probs.sum()) - 1) < 1e-5
    logits = torch.tensor(values)
    assert probs[0, logits >= logits.max() - 1e-6].sum() > 0  # a most likely token always survives (ties aside)


@settings(max_examples=100, deadline=None)
@given(values=logits_arrays, data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_choose_among_emits_supported_tokens(values, data, seed):
    probs = torch.softmax(torch.tensor(values), -1)
    candidates = data.draw(st.lists(st.integers(0, 5), unique=True, max_size=6))
    index, token = accept_one(probs, candidates, torch.Generator().manual_seed(seed))
    assert probs[token] > 0
    if index is not None:
        assert candidates[index] == token
    else:  # a residual draw never repeats a refused candidate
        assert token not in candidates


@settings(max_examples=100, deadline=None)
@given(tree=trees())
def test_tree_ancestry(tree):
    """The verification mask: ancestors[i, j] says that node i sees node j (itself or an ancestor)."""
    seen = tree.ancestors()
    assert seen[:, 0].all() and seen.diagonal().all()  # everyone sees the root and itself
    assert seen.sum(1).tolist() == [d + 1 for d in tree.depths]  # one node per level of its path, no sibling
    assert not seen.triu(1).any()  # parent-first order: a node sees only earlier nodes
    assert all(seen[node, tree.parents[node]] for node in range(1, len(tree)))
    two_hops = (seen.float() @ seen.float()) > 0
    assert torch.equal(two_hops, seen)  # closed: an ancestor's ancestors are ancestors too
    assert all(tree.depths[c] == tree.depths[node] + 1 for node in range(len(tree)) for c in tree.children[node])
