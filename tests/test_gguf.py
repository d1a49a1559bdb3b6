"""GGUF targets: loading through transformers, the dequantised cache, and bad files."""

import os
import shutil

import pytest
import torch

import eagle3.gguf
from eagle3.target import load_target, set_arithmetic
from tests.gguf_files import write_tiny_llama


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE3_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_gguf_file_or_folder_loads_as_transformers_reads_it(tmp_path, cache):
    from transformers import AutoModelForCausalLM

    write_tiny_llama(str(tmp_path / "tiny.gguf"))
    reference = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file="tiny.gguf", dtype=torch.float32)
    set_arithmetic(reference.eval())  # the kernels a loaded target runs, so that the same weights give the same bits
    ids = torch.tensor([[5, 70, 200, 3]])
    for path in (tmp_path / "tiny.gguf", tmp_path):  # the file, or the folder that holds it
        target = load_target(str(path), "cpu", "float32")
        assert target.num_layers == 4 and target.vocab_size == 260 and target.eos_token_ids == {257}
        assert target.tokenizer.chat_template and target.tokenizer("a b ab").input_ids == [64, 220, 65, 259]
        torch.testing.assert_close(target.model(ids).logits, reference(ids).logits, rtol=0, atol=0)
    entries = os.listdir(cache / "gguf")
    assert entries == [eagle3.gguf.sha256(str(tmp_path / "tiny.gguf"))]


def test_second_load_reads_the_cache_and_an_edited_file_gets_a_new_entry(tmp_path, cache, monkeypatch):
    path = str(tmp_path / "tiny.gguf")
    write_tiny_llama(path)
    first = load_target(path, "cpu", "float32")
    monkeypatch.setattr(eagle3.gguf, "_write_model_directory", lambda *a: pytest.fail("dequantised again"))
    again = load_target(path, "cpu", "bfloat16")
    assert again.dtype == torch.bfloat16
    torch.testing.assert_close(again.model.lm_head.weight.float(), first.model.lm_head.weight.bfloat16().float())
    monkeypatch.undo()
    monkeypatch.setenv("EAGLE3_CACHE", str(cache))
    write_tiny_llama(path, seed=1)
    load_target(path, "cpu", "float32")
    assert len(os.listdir(cache / "gguf")) == 2


def test_bad_gguf_files_are_named_with_the_reason(tmp_path, cache):
    good = tmp_path / "good.gguf"
    write_tiny_llama(str(good))
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    not_gguf = tmp_path / "weights.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 a zip file")
    other_arch, q5 = tmp_path / "other.gguf", tmp_path / "q5.gguf"
    write_tiny_llama(str(other_arch), arch="notamodel")
    write_tiny_llama(str(q5), quantization="Q5_0")
    cases = [(truncated, "is truncated: .* bytes, but its tensors end at byte"),
             (not_gguf, "is not a GGUF file"),
             (other_arch, "architecture notamodel is not supported"),
             (q5, "ggml type 6, which is not supported")]
    for path, reason in cases:
        with pytest.raises(ValueError, match=reason) as error:
            load_target(str(path), "cpu")
        assert str(path) in str(error.value) and "\n" not in str(error.value)
    assert not os.path.exists(cache / "gguf") or not [e for e in os.listdir(cache / "gguf") if not e.startswith(".")]


def test_a_folder_with_two_gguf_files_is_refused(tmp_path, cache):
    write_tiny_llama(str(tmp_path / "a.gguf"))
    shutil.copy(tmp_path / "a.gguf", tmp_path / "b.gguf")
    with pytest.raises(ValueError, match=r"holds 2 .gguf files \(a.gguf, b.gguf\)"):
        load_target(str(tmp_path), "cpu")
