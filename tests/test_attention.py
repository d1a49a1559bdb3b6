"""eagle3/csrc/attention.cpp, the attention the decoders run on a CPU in bfloat16: a row's bits
depend only on its own query and the keys it keeps, so a tree node, a step and a row of a
batch agree by construction. (That the decoders agree end to end is tests/test_invariant.py's.)"""

import pytest
import torch

from eagle3.invariant import invariant_attention
from eagle3.native import layer_ops

pytestmark = pytest.mark.skipif(layer_ops() is None, reason="eagle3.native needs a C++ compiler and ninja")
MASKED = torch.finfo(torch.float32).min


def attention(query, key, value, mask=None, scaling=0.125):
    return layer_ops().attention(query, key, value, mask, scaling)


def random_inputs(generator, batch=2, heads=9, kv_heads=3, queries=5, length=40, dim=64):
    query = torch.randn(batch, heads, queries, dim, generator=generator).to(torch.bfloat16)
    key, value = (torch.randn(batch, kv_heads, length, dim, generator=generator) for _ in range(2))
    return query, key, value


@pytest.mark.parametrize("dim", [64, 128, 24])
def test_it_is_attention(dim):
    """Within bfloat16's rounding of float64 attention (grouped-query heads, a causal mask)."""
    query, key, value = random_inputs(torch.Generator().manual_seed(0), dim=dim)
    q, length = query.shape[2], key.shape[2]
    mask = torch.zeros(1, 1, q, length)
    mask[..., length - q:] = torch.full((q, q), MASKED).triu(1)
    out = attention(query, key, value, mask)
    repeat = lambda x: x.double().repeat_interleave(3, 1)
    scores = query.double() @ repeat(key).transpose(-1, -2) * 0.125 + mask.double()
    expected = (torch.softmax(scores, -1) @ repeat(value)).transpose(1, 2)
    assert out.dtype == torch.bfloat16 and out.shape == expected.shape
    torch.testing.assert_close(out.double(), expected, atol=0, rtol=2 ** -7)


def test_a_row_gets_the_bits_of_its_kept_keys_alone():
    """A row among others, under a mask that keeps scattered keys (a tree node's ancestors),
    equals the same query alone over just those keys, contiguous and unmasked (its step)."""
    generator = torch.Generator().manual_seed(1)
    query, key, value = random_inputs(generator, queries=8)
    keep = torch.rand(2, 1, 8, 40, generator=generator) < 0.6
    keep[..., 0] = True
    together = attention(query, key, value, torch.where(keep, 0.0, MASKED))
    for b in range(2):
        for i in range(8):
            kept = keep[b, 0, i].nonzero()[:, 0]
            alone = attention(query[b:b + 1, :, i:i + 1], key[b:b + 1, :, kept], value[b:b + 1, :, kept])
            assert torch.equal(alone[0, 0], together[b, i])


@pytest.mark.parametrize("shape", ["tree", "causal"])
def test_rows_over_many_keys_get_the_bits_of_their_keys_alone(shape):
    """Rows that keep the same first keys, over several of the kernel's blocks of keys: a
    tree's nodes after a context, and a prompt's causal rows. Each row equals its query alone
    over its keys."""
    generator = torch.Generator().manual_seed(6)
    context, nodes = 150, 21
    query, key, value = random_inputs(generator, batch=1, queries=nodes, length=context + nodes)
    keep = torch.zeros(1, 1, nodes, context + nodes, dtype=torch.bool)
    if shape == "tree":  # node i's parent is an earlier node (or the context's last token)
        keep[..., :context] = True
        for i in range(nodes):
            parent = int(torch.randint(-1, i, (), generator=generator)) if i else -1
            if parent >= 0:
                keep[0, 0, i] = keep[0, 0, parent]
            keep[0, 0, i, context + i] = True
    else:
        keep[0, 0] = torch.ones(nodes, context + nodes, dtype=torch.bool).tril(context)
    together = attention(query, key, value, keep)
    for i in range(nodes):
        kept = keep[0, 0, i].nonzero()[:, 0]
        alone = attention(query[:, :, i:i + 1], key[:, :, kept], value[:, :, kept])
        assert torch.equal(alone[0, 0], together[0, i]), i


def test_a_keep_mask_gives_the_additive_masks_bits():
    """A bool mask (True: kept), as the decoders pass it (eagle3.masks), is the additive one."""
    generator = torch.Generator().manual_seed(3)
    query, key, value = random_inputs(generator, queries=6)
    keep = torch.rand(2, 1, 6, 40, generator=generator) < 0.5
    keep[..., 0] = True
    assert torch.equal(attention(query, key, value, keep), attention(query, key, value, torch.where(keep, 0.0, MASKED)))


def test_keys_and_values_in_the_query_dtype_give_the_same_bits():
    query, key, value = random_inputs(torch.Generator().manual_seed(2))
    key, value = key.to(torch.bfloat16), value.to(torch.bfloat16)
    assert torch.equal(attention(query, key, value), attention(query, key.float(), value.float()))


def test_a_row_that_keeps_no_key_is_zeros():
    """A padding row of a batch: zeros, not NaN."""
    query, key, value = random_inputs(torch.Generator().manual_seed(3), batch=1, queries=2)
    mask = torch.zeros(1, 1, 2, 40)
    mask[0, 0, 1] = MASKED
    out = attention(query, key, value, mask)
    assert torch.equal(out[0, 1], torch.zeros_like(out[0, 1])) and out[0, 0].abs().sum() > 0


def test_what_it_cannot_take_is_named():
    query, key, value = random_inputs(torch.Generator().manual_seed(4))
    with pytest.raises(RuntimeError, match="a mask of shape"):
        attention(query, key, value, torch.zeros(2, 1, 3, 40))
    query, key, value = random_inputs(torch.Generator().manual_seed(4), dim=272)
    with pytest.raises(RuntimeError, match="head dimension 272 is over 256"):
        attention(query, key, value)


def test_transformers_calls_it():
    """invariant_attention, registered with transformers, runs it."""
    query, key, value = random_inputs(torch.Generator().manual_seed(5))
    out, weights = invariant_attention(None, query, key, value, None, 0.125)
    assert weights is None and torch.equal(out, attention(query, key, value))
