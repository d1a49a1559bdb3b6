"""GGUF targets: a `.gguf` file read by transformers' own GGUF support, dequantised once.

Dequantising a GGUF file takes seconds to minutes, so the result is kept as an ordinary
model directory (config, float32 safetensors, tokenizer) in a user cache keyed by the
file's sha256: later loads read that directory in about a second, and an edited file gets
a new entry. The cache lives in $EAGLE3_CACHE, else $XDG_CACHE_HOME/eagle3, else
~/.cache/eagle3.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile

import torch
from safetensors.torch import save_file

GGUF_SUFFIX = ".gguf"
GGUF_MAGIC = b"GGUF"


def cache_root() -> str:
    if os.environ.get("EAGLE3_CACHE"):
        return os.environ["EAGLE3_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "eagle3")


def find_gguf(path: str) -> str | None:
    """The GGUF file that `path` names: the file itself, or the one .gguf file in a directory
    that holds no config.json. None when `path` is not a GGUF target."""
    if os.path.isfile(path):
        return path if path.endswith(GGUF_SUFFIX) else None
    if not os.path.isdir(path) or os.path.exists(os.path.join(path, "config.json")):
        return None
    files = sorted(f for f in os.listdir(path) if f.endswith(GGUF_SUFFIX))
    if len(files) > 1:
        raise ValueError(f"target: {path} holds {len(files)} .gguf files ({', '.join(files)}); name one of them")
    return os.path.join(path, files[0]) if files else None


def sha256(path: str, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def check_gguf(gguf_file: str) -> None:
    """Refuse, in one line naming the file, what transformers would fail on later and less
    clearly: another format, a header it cannot parse (an unsupported quantisation among
    them), or tensor data cut short."""
    from transformers.integrations.gguf.reader import GgufHeader

    with open(gguf_file, "rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise ValueError(f"target: {gguf_file} is not a GGUF file (it does not start with 'GGUF')")
    try:
        header = GgufHeader.from_file(gguf_file)
    except Exception as error:  # the header parser raises several kinds
        raise ValueError(f"target: cannot read GGUF file {gguf_file}: {one_line(error)}") from error
    end = header.data_start + max((t.offset + t.nbytes for t in header.tensors), default=0)
    size = os.path.getsize(gguf_file)
    if size < end:
        raise ValueError(f"target: GGUF file {gguf_file} is truncated: {size} bytes, but its tensors end at byte {end}")


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def dequantized(gguf_file: str) -> str:
    """A model directory holding `gguf_file` dequantised to float32, made on first use."""
    check_gguf(gguf_file)
    directory = os.path.join(cache_root(), "gguf", sha256(gguf_file))
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return directory
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    building = tempfile.mkdtemp(prefix=".building-", dir=os.path.dirname(directory))
    try:
        _write_model_directory(gguf_file, building)
        if os.path.exists(directory):  # another process finished first; both wrote the same files
            shutil.rmtree(building)
        else:
            os.replace(building, directory)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return directory


def _write_model_directory(gguf_file: str, out: str) -> None:
    """Dequantise with transformers and save as a plain float32 model directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = os.path.split(os.path.abspath(gguf_file))
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    except Exception as error:  # the GGUF reader raises many kinds: name the file and the reason, once
        raise ValueError(f"target: cannot read GGUF file {gguf_file}: {one_line(error)}") from error
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the saved weights are plain float32
    config.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    state = model.state_dict()
    if config.tie_word_embeddings:
        state.pop("lm_head.weight", None)  # tied to the input embeddings; saving both would duplicate them
    save_file({k: v.contiguous() for k, v in state.items()}, os.path.join(out, "model.safetensors"),
              metadata={"format": "pt", "source": os.path.basename(gguf_file)})
