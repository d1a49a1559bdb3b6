"""Data between the host and the device, each move named.

A decode round reads from the device at most twice (the drafted tree, the target's verdict
on it), and each read is one `to_host`: the only call in the decode loop that waits for the
device, however many tensors it moves. Host data goes the other way with `to_device`, which
never waits: on CUDA it copies from pinned memory asynchronously (torch's pinned-memory
allocator keeps the buffer until the copy is done). On the CPU both are plain conversions.
"""

from __future__ import annotations

import statistics
import time

import torch


def to_host(*tensors: torch.Tensor) -> list[list]:
    """The tensors' values as (nested) Python lists, after one wait for the device."""
    device = tensors[0].device
    if device.type == "cuda":
        tensors = tuple(t.to("cpu", non_blocking=True) for t in tensors)
        torch.cuda.current_stream(device).synchronize()
    return [t.tolist() for t in tensors]


def to_device(data, device: torch.device, dtype: torch.dtype = torch.long) -> torch.Tensor:
    """Host data (a nested list, or a host tensor) on the device, without waiting for it."""
    host = data.to(dtype) if isinstance(data, torch.Tensor) else torch.tensor(data, dtype=dtype)
    if device.type == "cpu":
        return host
    return host.pin_memory().to(device, non_blocking=True)


def clock(device: torch.device) -> float:
    """Wall time once the device's queued work is done: for timing whole runs (eagle3.bench,
    eagle3.costs), never inside the decode loop."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def call_seconds(fn, device: torch.device, repeats: int, statistic=statistics.median) -> float:
    """The `statistic` (default: the median) of the wall times of `repeats` calls of fn after
    one warm-up call, each timed by `clock`."""
    fn()
    times = []
    for _ in range(repeats):
        start = clock(device)
        fn()
        times.append(clock(device) - start)
    return statistic(times)
