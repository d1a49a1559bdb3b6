"""The head's drafting step in C++ (eagle3.head.Eagle3DecoderLayer.native_forward): a
bfloat16 head on prepacked products drafts through it, computing what the Python layer
computes (its norms bit for bit, the rest within bfloat16's rounding, since the C++
attention sums in its own order); its draft cache stores float32; its rotary values come from a table with
the rotary embedding's own bits. Where the layer is not built, or the products are not
prepacked, the Python layer drafts as before."""

import pytest
import torch

from eagle3.head import Eagle3DecoderLayer
from eagle3.invariant import onednn_packs, prepack_linears
from eagle3.native import layer_ops, own_products
from tests.models import make_head, make_target

pytestmark = pytest.mark.skipif(layer_ops() is None
                                or not (onednn_packs(torch.bfloat16) or own_products(torch.bfloat16)),
                                reason="needs the C++ layer (a C++ compiler and ninja) and bfloat16 packing "
                                       "(the C++ product's or oneDNN's)")

WIDTHS = dict(hidden_size=576, intermediate_size=1536, num_attention_heads=9, num_key_value_heads=3)  # SmolLM2's


@pytest.fixture(scope="module")
def head():
    target = make_target(vocab_size=64, **WIDTHS)
    head = make_head(target, draft_vocab_size=48, num_attention_heads=9, num_key_value_heads=3,
                     intermediate_size=1536).to(torch.bfloat16)
    with torch.no_grad():  # norms other than ones, so that a norm's rounding is seen
        for module in head.modules():
            if hasattr(module, "variance_epsilon"):
                module.weight.uniform_(0.5, 1.5)
    prepack_linears(head)  # as eagle3.checkpoint.load_head does
    return head


def python_layer(monkeypatch):
    monkeypatch.setattr(Eagle3DecoderLayer, "runs_native", lambda self: False)


@torch.inference_mode()
def draft_steps(head, generator):
    """Consume 12 pairs, then one level of 4 nodes, each seeing the pairs and itself: the
    outputs [1, 12, H] and [1, 4, H] and the level's logits."""
    hidden_size = head.config.hidden_size
    cache = head.draft_cache(32).layers[0]
    features = torch.randn(1, 12, 3 * hidden_size, generator=generator).to(torch.bfloat16)
    tokens = torch.randint(0, 64, (1, 12), generator=generator)
    causal = torch.ones(12, 12, dtype=torch.bool).tril()
    pairs = head(head.project(features), tokens, torch.arange(12)[None], causal[None, None], cache)
    level = torch.cat([torch.ones(4, 12, dtype=torch.bool), torch.eye(4, dtype=torch.bool)], 1)
    nodes = head(pairs[:, -1:].expand(1, 4, -1), torch.randint(0, 64, (1, 4), generator=generator),
                 torch.full((1, 4), 12), level[None, None], cache)
    return pairs, nodes, head.logits(nodes)


def test_the_cpp_step_computes_the_python_step(head, monkeypatch):
    with torch.inference_mode():  # as drafting runs: no gradient, so the products run prepacked
        assert head.midlayer.runs_native()
    native = draft_steps(head, torch.Generator().manual_seed(0))
    python_layer(monkeypatch)
    python = draft_steps(head, torch.Generator().manual_seed(0))
    for cpp, stock in zip(native, python):  # a random head's states reach hundreds: compared by norm
        assert ((cpp.float() - stock.float()).norm() / stock.float().norm()).item() < 0.02


def test_its_norms_have_the_python_norms_bits(head, monkeypatch):
    hidden = torch.randn(3, 5, head.config.hidden_size).to(torch.bfloat16)
    with torch.inference_mode():
        native = [head.normed(norm, hidden) for norm in (head.norm, head.midlayer.hidden_norm)]
    python_layer(monkeypatch)
    with torch.inference_mode():
        python = [head.normed(norm, hidden) for norm in (head.norm, head.midlayer.hidden_norm)]
    assert all(torch.equal(a, b) for a, b in zip(native, python))


def test_the_draft_cache_stores_what_the_attention_reads(head, monkeypatch):
    assert head.draft_cache(8).layers[0].storage_dtype == torch.float32
    python_layer(monkeypatch)
    assert head.draft_cache(8).layers[0].storage_dtype is None  # the head's own


def test_the_rotary_table_has_the_rotary_embeddings_bits(head):
    cache = head.draft_cache(300).layers[0]
    hidden = torch.zeros(2, 7, head.config.hidden_size, dtype=torch.bfloat16)
    positions = torch.tensor([[0, 1, 2, 3, 150, 151, 299], [5, 17, 64, 65, 128, 200, 298]])
    for table, computed in zip(head.rotation(hidden, positions, cache), head.rotary(hidden, positions)):
        assert torch.equal(table, computed)
