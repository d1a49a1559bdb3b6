"""Target / head pairs the app and the CLIs offer by name; the first is the default."""

from __future__ import annotations

import os
from dataclasses import dataclass

from eagle3.checkpoint import EMBEDDED_HEAD, EMBEDDED_TARGET, ROOT
from eagle3.tree import TreeConfig

SMOLLM2_TARGET = os.path.join(ROOT, "checkpoints", "smollm2")  # holds the GGUF file; see its README
SMOLLM2_HEAD = os.path.join(ROOT, "checkpoints", "smollm2-eagle3")


@dataclass(frozen=True)
class Preset:
    name: str
    target: str  # local directory, .gguf file or hub id
    head: str
    chat: bool  # wrap prompts in the target's chat template
    tree: TreeConfig
    note: str = ""
    dtype: str = "auto"  # the target's dtype (auto: float32 on a CPU, bfloat16 on CUDA)


SMOLLM2 = Preset(
    "SmolLM2-135M-Instruct + EAGLE-3 head (CPU, offline)", SMOLLM2_TARGET, SMOLLM2_HEAD, chat=True,
    tree=TreeConfig(depth=4, top_k=4, total_tokens=16),
    note="Hugging Face's SmolLM2-135M-Instruct (Apache-2.0, the Q4_1 GGUF dequantised) with an EAGLE-3 head "
         "this project trained on the model's own replies. A chat: each reply is decoded twice, from the same history.",
)
STDLIB = Preset(
    "Embedded: stdlib Llama + EAGLE-3 head (code completion)", EMBEDDED_TARGET, EMBEDDED_HEAD, chat=False,
    tree=TreeConfig(depth=5, top_k=3, total_tokens=16),
    note="A 22M-parameter Llama this project trained on the Python standard library; prompts are continued as code.",
)
DEFAULT = SMOLLM2
PRESETS = [
    SMOLLM2,
    STDLIB,
    Preset("Llama-3.1-8B-Instruct + yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "meta-llama/Llama-3.1-8B-Instruct",
           "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", chat=True, tree=TreeConfig(7, 10, 60),
           note="Needs a GPU and access to the hub (the Llama weights are gated)."),
    Preset("Qwen3-8B + AngelSlim/Qwen3-8B_eagle3", "Qwen/Qwen3-8B", "AngelSlim/Qwen3-8B_eagle3", chat=True,
           tree=TreeConfig(8, 4, 32), note="Needs a GPU and access to the hub."),
]


def preset_for(target: str) -> Preset | None:
    """The preset whose target this is: its head, dtype, tree and chat mode are the defaults
    of the CLIs for that target."""
    return next((p for p in PRESETS if p.target == target or os.path.abspath(p.target) == os.path.abspath(target)), None)
