"""What the trainers share: the optimiser, the schedule, the CSV log, resumable state.

Seeding is transformers.set_seed. The schedule is this file's own rather than transformers'
cosine-with-min-lr: that one starts its warm-up at lr 0 (a wasted first step), and the
committed heads' recorded training runs use this one."""

from __future__ import annotations

import csv
import math
import os
from contextlib import contextmanager

import torch


def adamw(parameters, lr: float, weight_decay: float = 0.0, betas=(0.9, 0.95)) -> torch.optim.AdamW:
    return torch.optim.AdamW([p for p in parameters if p.requires_grad], lr=lr, betas=betas, weight_decay=weight_decay)


def cosine_lr(step: int, total: int, warmup: int, peak: float, floor: float = 0.1) -> float:
    """Linear warm-up to peak, then cosine decay to floor * peak at `total`."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def autocast(device: torch.device, enabled: bool):
    """bfloat16 autocast where the device has it (CUDA, or CPUs with AVX-512 BF16 / AMX)."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)


class CsvLog:
    """Append rows to a CSV file, writing the header once (resuming keeps the old rows)."""

    def __init__(self, path: str, fields: list[str]):
        self.path, self.fields = path, fields
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if not os.path.exists(path):
            with open(path, "w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerow(fields)

    def drop_after(self, step: int) -> None:
        """Forget the rows of steps after `step`: a run cut off after its last save logged
        steps that its resumption runs again, and each step's row (its wall time among them)
        must be counted once."""
        with open(self.path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        kept = [rows[0]] + [r for r in rows[1:] if int(r[0]) <= step]
        if len(kept) < len(rows):
            with written_whole(self.path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerows(kept)

    def write(self, **row) -> None:
        with open(self.path, "a", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow([row.get(k, "") for k in self.fields])


@contextmanager
def written_whole(path: str):
    """Yield a temporary name to write to; it becomes `path` only once the writing is done,
    so that an interrupted run leaves the file complete or absent, never half-written."""
    yield path + ".tmp"
    os.replace(path + ".tmp", path)


def save_state(path: str, model: torch.nn.Module, optimizer: torch.optim.Optimizer, step: int, **extra) -> None:
    """Everything needed to resume: weights, optimiser, step and the RNG states."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
             "torch_rng": torch.get_rng_state(), **extra}
    with written_whole(path) as temporary:
        torch.save(state, temporary)


def load_state(path: str, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    return state
