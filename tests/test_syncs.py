"""The decode loop waits for the device at most twice a round (the drafted tree, the
target's verdict on it) and once a token in plain decoding, as `model.generate` does. A GPU
is not needed to count: every Python call that would make the host wait for a GPU is
wrapped here and counted on the CPU."""

import pytest
import torch

import eagle3.transfer
from eagle3 import GenerationConfig, SamplingConfig, TreeConfig, decode, drafter_named
from eagle3.budget import NodeBudget, VerifyCosts
from tests.models import make_head, make_target
from tests.test_greedy import random_prompts

READS = ("tolist", "item", "__int__", "__float__", "__bool__", "__index__", "numpy", "cpu")  # values to the host


class SyncCounter:
    """Counts the waits for the device: each eagle3.transfer.to_host call once, however many
    tensors it reads, and outside the transfer module every read of a tensor's values and every
    tensor built from host data straight onto a device (a blocking copy on CUDA). A `.to(device)`
    of a host tensor is not counted: on the CPU it cannot be told from the no-op that a device
    tensor's `.to(its device)` is (transformers makes those), so host data goes through
    eagle3.transfer.to_device, by review."""

    def __init__(self, monkeypatch):
        self.waits, self.strays, self.inside = 0, [], False
        for name in READS:
            monkeypatch.setattr(torch.Tensor, name, self.wrap(getattr(torch.Tensor, name), name))
        for name in ("tensor", "as_tensor"):  # host data built straight onto a device
            monkeypatch.setattr(torch, name, self.wrap(getattr(torch, name), f"torch.{name}", moves=True))
        monkeypatch.setattr(torch.Tensor, "new_tensor", self.wrap(torch.Tensor.new_tensor, "new_tensor"))
        monkeypatch.setattr(eagle3.transfer, "to_host", self.sanctioned(eagle3.transfer.to_host, counts=True))
        monkeypatch.setattr(eagle3.transfer, "to_device", self.sanctioned(eagle3.transfer.to_device, counts=False))

    def wrap(self, original, name, moves=False):
        def counted(*args, **kwargs):
            if not self.inside and (not moves or _names_a_device(args[1:], kwargs)):
                self.waits += 1
                self.strays.append(name)
            return original(*args, **kwargs)
        return counted

    def sanctioned(self, original, counts):
        def call(*args, **kwargs):
            self.waits += counts
            self.inside = True
            try:
                return original(*args, **kwargs)
            finally:
                self.inside = False
        return call


def _names_a_device(args, kwargs) -> bool:
    values = list(args) + [kwargs.get("device")]
    return any(isinstance(v, torch.device) or (isinstance(v, str) and v.split(":")[0] in ("cpu", "cuda"))
               for v in values)


def waits_per_step(counter: SyncCounter, events) -> list[int]:
    """The waits made while producing each event (a round's work happens before its first event)."""
    counts = []
    while True:
        before = counter.waits
        try:
            next(events)
        except StopIteration:
            return counts
        counts.append(counter.waits - before)


@pytest.fixture(scope="module")
def pair():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    return target, make_head(target, draft_vocab_size=24)


@pytest.mark.parametrize("drafter,most", [("plain", 1), ("lookup", 1), ("eagle3", 2), ("hybrid", 2)])
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("sampling", [SamplingConfig(), SamplingConfig(temperature=0.8, top_p=0.9)])
def test_a_round_waits_for_the_device_at_most_twice(pair, monkeypatch, drafter, most, rows, sampling):
    target, head = pair
    prompts = [p * 2 for p in random_prompts(rows, target.vocab_size, seed=3)]  # repeats, so copies are drafted
    events = decode(target, prompts if rows > 1 else prompts[0],
                    drafter_named(drafter, head if drafter in ("eagle3", "hybrid") else None, TreeConfig(3, 3, 10)),
                    GenerationConfig(24, sampling, seed=0))
    counter = SyncCounter(monkeypatch)
    counts = waits_per_step(counter, events)
    assert len(counts) >= 24 // 4 * rows and max(counts) <= most, (counts, counter.strays[:8])


def test_a_node_budget_adds_no_wait(pair, monkeypatch):
    target, head = pair
    prompts = [p * 2 for p in random_prompts(3, target.vocab_size, seed=3)]
    budget = NodeBudget(VerifyCosts((1, 16), (1.0, 1.3)), floors=False)  # as node_budget makes it on a GPU
    events = decode(target, prompts, drafter_named("hybrid", head, TreeConfig(3, 3, 10), budget=budget),
                    GenerationConfig(24, seed=0))
    counter = SyncCounter(monkeypatch)
    counts = waits_per_step(counter, events)
    assert len(counts) >= 24 // 4 * 3 and max(counts) <= 2, (counts, counter.strays[:8])
