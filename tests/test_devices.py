"""Device rules that a CPU can check: which dtype `auto` picks for a CUDA device."""

import torch

import eagle3.target
from eagle3.target import bf16_native, resolve_dtype


def test_auto_picks_bfloat16_only_where_cuda_has_it_in_hardware(monkeypatch):
    assert not bf16_native((7, 0)) and not bf16_native((7, 5))  # V100, T4: emulated
    assert bf16_native((8, 0)) and bf16_native((8, 6)) and bf16_native((9, 0))  # A100, A10 / RTX 30, H100
    cuda = torch.device("cuda")
    for capability, want in (((7, 5), torch.float32), ((8, 0), torch.bfloat16)):
        monkeypatch.setattr(eagle3.target.torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        monkeypatch.setattr(eagle3.target.torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # what T4s report
        assert resolve_dtype("auto", cuda) == want
