"""eagle3.native: where the C++ decoder layer and attention cannot be built, it says why once
and the Python ones run; EAGLE3_NATIVE=0 leaves them unbuilt; its argmax is torch.argmax's,
and its choice of a draft level's children (eagle3.tree.top_children) ATen's.
(That the C++ layer computes the Python layer's bits is tests/test_invariant.py's, the
attention's tests/test_attention.py's.)"""

import pytest
import torch
import torch.utils.cpp_extension

from eagle3 import native, tree


@pytest.mark.skipif(native.layer_ops() is None, reason="needs the C++ build (a C++ compiler and ninja)")
def test_argmax_is_torchs():
    """Rows of logits whose largest value recurs (the first wins), sits in the last lanes or
    the tail past the last vector, is -inf everywhere, or is beaten by a NaN (the first NaN
    wins), at widths under, at and over a vector's eight (AVX2) or sixteen lanes."""
    generator = torch.Generator().manual_seed(0)
    for width in (1, 5, 7, 8, 9, 16, 17, 49152, 49157):
        logits = torch.randn(3, 7, width, generator=generator)
        logits[0, 1] = 2.0  # every value the largest
        logits[0, 2] = -float("inf")
        logits[1, 0, -1] = 99.0  # the last value, in the tail where there is one
        logits[1, 1, width // 2] = logits[1, 1, width - 1] = 50.0
        logits[2, 0, width - 1] = float("nan")
        logits[2, 1, width // 3] = float("nan")
        logits[2, 1, 0] = float("nan")
        logits[2, 2, :16] = 7.0  # ties in every lane of the first vector
        expected = logits.argmax(-1)
        assert torch.equal(native.argmax(logits), expected), width
        assert torch.equal(native.argmax(logits[:, 3:5]), expected[:, 3:5])  # not contiguous
    with pytest.raises(RuntimeError, match="argmax: float32 logits"):
        native.layer_ops().argmax(torch.zeros(2, 0))
    assert torch.equal(native.argmax(torch.tensor([[1.0, 3.0, 3.0]], dtype=torch.bfloat16)), torch.tensor([1]))


@pytest.mark.skipif(native.layer_ops() is None, reason="needs the C++ build (a C++ compiler and ninja)")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_top_children_is_atens_choice(dtype, monkeypatch):
    """The children and best children the ATen ops choose, with scores within a few float32
    ulps of the log-sum-exp they subtract (about 20 here: the two exponentials differ in their
    last bits, ATen's by CPU), at vocabularies under, at and over eight and sixteen lanes, for a level's
    root (one node) and a frontier of k nodes, top_k up to the whole vocabulary. bfloat16
    logits tie often: there the chosen values are ATen's, and equal ones come in id order."""
    generator = torch.Generator().manual_seed(0)
    for vocab, nodes, top_k in ((5, 1, 5), (9, 2, 3), (16, 3, 2), (37, 4, 4), (6144, 1, 10), (6144, 4, 4), (49157, 2, 8)):
        logits = (torch.randn(2, nodes, vocab, generator=generator) * 4).to(dtype)
        scores = -torch.rand(2, nodes, generator=generator) * 5
        d2t = torch.randint(0, 1000, (vocab,), generator=generator) if dtype == torch.float32 else torch.zeros(
            vocab, dtype=torch.long)
        cpp = tree.top_children(logits, scores, d2t, top_k)
        monkeypatch.setattr(tree, "layer_ops", lambda: None)
        aten = tree.top_children(logits, scores, d2t, top_k)
        monkeypatch.undo()
        for field in ("scores", "best_scores"):
            torch.testing.assert_close(getattr(cpp, field), getattr(aten, field), atol=1e-5, rtol=2e-6)
        assert torch.equal(cpp.best_scores, cpp.scores.gather(1, cpp.best))
        assert torch.equal(cpp.best_tokens, cpp.tokens.gather(1, cpp.best))
        if dtype == torch.float32:  # no ties
            assert all(torch.equal(getattr(cpp, field), getattr(aten, field)) for field in ("tokens", "best", "best_tokens"))
            continue
        ids = cpp.tokens.view(2, nodes, top_k)
        chosen = logits.gather(2, ids)
        assert torch.equal(chosen, logits.gather(2, aten.tokens.view(2, nodes, top_k)))
        assert bool(((chosen[..., 1:] < chosen[..., :-1]) | (ids[..., 1:] > ids[..., :-1])).all())
    with pytest.raises(RuntimeError, match="top_children: top_k 7 for a vocabulary of 5"):
        native.layer_ops().top_children(torch.zeros(1, 1, 5), torch.zeros(1, 1), torch.zeros(5, dtype=torch.long), 7)


def test_a_failed_build_is_named_and_leaves_the_python_layer(monkeypatch, capsys):
    def no_compiler(*args, **kwargs):
        raise RuntimeError("Error building extension 'eagle3_decoder_layer': c++: not found\nmore output")

    monkeypatch.setattr(torch.utils.cpp_extension, "load", no_compiler)
    monkeypatch.delenv("EAGLE3_NATIVE", raising=False)
    native.layer_ops.cache_clear()
    try:
        assert native.layer_ops() is None
        assert native.layer_ops() is None  # asked again: said once
        err = capsys.readouterr().err
        assert err.count("eagle3: the C++ decoder layer was not built") == 1
        assert "c++: not found" in err and "more output" not in err and "Python layer" in err
    finally:
        native.layer_ops.cache_clear()


def test_turned_off_by_the_environment(monkeypatch):
    def must_not_build(*args, **kwargs):
        raise AssertionError("built although EAGLE3_NATIVE=0")

    monkeypatch.setattr(torch.utils.cpp_extension, "load", must_not_build)
    monkeypatch.setenv("EAGLE3_NATIVE", "0")
    native.layer_ops.cache_clear()
    try:
        assert native.layer_ops() is None
    finally:
        native.layer_ops.cache_clear()
