"""eagle3.native: where the C++ decoder layer and attention cannot be built, it says why once
and the Python ones run; EAGLE3_NATIVE=0 leaves them unbuilt. (That the C++ layer computes
the Python layer's bits is tests/test_invariant.py's, the attention's tests/test_attention.py's.)"""

import torch.utils.cpp_extension

from eagle3 import native


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
