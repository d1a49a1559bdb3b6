"""Target / head pairs the app and the CLIs offer by name."""

from __future__ import annotations

from dataclasses import dataclass

from eagle3.checkpoint import EMBEDDED_HEAD, EMBEDDED_TARGET
from eagle3.tree import TreeConfig


@dataclass(frozen=True)
class Preset:
    name: str
    target: str  # local directory or hub id
    head: str
    chat: bool  # wrap prompts in the target's chat template
    tree: TreeConfig
    note: str = ""


EMBEDDED = Preset(
    "Embedded: stdlib Llama + EAGLE-3 head (CPU, offline)", EMBEDDED_TARGET, EMBEDDED_HEAD, chat=False,
    tree=TreeConfig(depth=5, top_k=3, total_tokens=16),
    note="A small Llama trained by this project on the Python standard library; prompts are continued as code.",
)
PRESETS = [
    EMBEDDED,
    Preset("Llama-3.1-8B-Instruct + yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "meta-llama/Llama-3.1-8B-Instruct",
           "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", chat=True, tree=TreeConfig(7, 10, 60),
           note="Needs a GPU and access to the hub (the Llama weights are gated)."),
    Preset("Qwen3-8B + AngelSlim/Qwen3-8B_eagle3", "Qwen/Qwen3-8B", "AngelSlim/Qwen3-8B_eagle3", chat=True,
           tree=TreeConfig(8, 4, 32), note="Needs a GPU and access to the hub."),
]
