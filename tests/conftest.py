"""Test fixtures. Everything runs offline, on the CPU, with models built here."""

from __future__ import annotations

import os
import shutil
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# GGUF targets are dequantised into this cache (the app's subprocesses inherit it); gone at the end
TEST_CACHE = os.environ["EAGLE3_CACHE"] = tempfile.mkdtemp(prefix="eagle3-test-cache-")
# pytest -n N (pytest-xdist) runs N workers side by side: each takes its share of the cores, and
# so do the processes it starts, since OpenMP threads that outnumber the cores spin against
# each other and slow every product many times over.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // WORKERS))

import pytest
import torch

if WORKERS > 1:
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

from tests.models import make_head, make_target, make_tokenizer


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory, tokenizer):
    """A target directory (model + tokenizer) and a head directory, as users have them."""
    from eagle3.checkpoint import save_head

    root = tmp_path_factory.mktemp("pair")
    target = make_target("llama", vocab_size=len(tokenizer), eos=tokenizer.eos_token_id)
    target.model.save_pretrained(root / "target")
    tokenizer.save_pretrained(root / "target")
    save_head(make_head(target, draft_vocab_size=200), str(root / "head"))
    return str(root / "target"), str(root / "head")


@pytest.fixture(scope="session")
def embedded():
    """The target / head pair that ships in checkpoints/."""
    from eagle3 import load_head, load_target
    from eagle3.checkpoint import EMBEDDED_HEAD, EMBEDDED_TARGET

    target = load_target(EMBEDDED_TARGET, "cpu", "float32")
    return target, load_head(EMBEDDED_HEAD, target)


@pytest.fixture(scope="session")
def default_pair():
    """The app's default pair: SmolLM2-135M-Instruct from its shipped GGUF, and its head."""
    from eagle3 import load_head, load_target
    from eagle3.presets import DEFAULT

    target = load_target(DEFAULT.target, "cpu", DEFAULT.dtype)
    return target, load_head(DEFAULT.head, target)


def pytest_unconfigure(config):
    shutil.rmtree(TEST_CACHE, ignore_errors=True)
