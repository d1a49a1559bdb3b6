"""Target / head pairs the app and the CLIs offer by name; the first is the default."""

from __future__ import annotations

import dataclasses
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
    chat: bool | None  # wrap prompts in the target's chat template; None: when its tokenizer has one
    tree: TreeConfig
    note: str = ""
    dtype: str = "auto"  # the target's dtype (auto: bfloat16 on CUDA and CPUs with exact bfloat16 (AVX2 and FMA, AVX-512 BF16 or AMX, with the C++ build), else float32)
    drafter: str = "eagle3"  # eagle3, lookup or hybrid (eagle3.lookup)


SMOLLM2 = Preset(
    "SmolLM2-135M-Instruct + EAGLE-3 head (CPU, offline)", SMOLLM2_TARGET, SMOLLM2_HEAD, chat=True,
    tree=TreeConfig(depth=4, top_k=4, total_tokens=16), drafter="hybrid",  # the bench's best drafter for it (README)
    note="Hugging Face's SmolLM2-135M-Instruct (Apache-2.0, the Q4_1 GGUF dequantised) with an EAGLE-3 head "
         "this project trained on the model's own replies. A chat: each reply is decoded twice, from the same history.",
)
STDLIB = Preset(
    "Embedded: stdlib Llama + EAGLE-3 head (code completion)", EMBEDDED_TARGET, EMBEDDED_HEAD, chat=False,
    tree=TreeConfig(depth=5, top_k=3, total_tokens=16), drafter="hybrid",  # ties lookup, ahead of EAGLE-3 alone (README)
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
    """The preset whose target this is, if any."""
    return next((p for p in PRESETS if p.target == target or os.path.abspath(p.target) == os.path.abspath(target)), None)


def pair_preset(target: str, draft: str | None) -> Preset:
    """The pair that --target (and --draft, where given) name, as the CLIs read them: a
    preset's target brings its head, chat mode and tree; any other needs --draft and is a
    chat when its tokenizer has a template."""
    preset = preset_for(target)
    if preset is not None:
        return preset if not draft else dataclasses.replace(preset, name=f"{target} + {draft}", head=draft,
                                                            note=f"--target {target} --draft {draft}")
    if not draft:
        raise ValueError(f"--draft: no head is known for --target {target}; name one")
    return Preset(f"{target} + {draft}", target, draft, chat=None, tree=TreeConfig(),
                  note=f"--target {target} --draft {draft}")


@dataclass(frozen=True)
class PairChoice:
    """What a CLI runs: each flag where given, else the target's preset, else the library default."""

    draft: str | None  # None: no head is known for the target
    dtype: str
    tree: TreeConfig
    chat: bool | None  # None: chat when the tokenizer has a template
    drafter: str = "eagle3"

    def chat_for(self, tokenizer) -> bool:
        return self.chat if self.chat is not None else bool(getattr(tokenizer, "chat_template", None))


def choose_pair(args) -> PairChoice:
    """From the flags the CLIs share: --target, --draft, --dtype, --depth, --top-k, --total-tokens, --chat."""
    if args.target == DEFAULT.target and not os.path.exists(args.target):
        raise FileNotFoundError(f"target: the default pair is not here ({args.target}); it ships in the project's "
                                "checkout (checkpoints/): run from one, set EAGLE3_HOME to one, or pass --target")
    preset = preset_for(args.target)
    base = preset.tree if preset else TreeConfig()
    choice = PairChoice(
        draft=args.draft or (preset.head if preset else None),
        dtype=args.dtype or (preset.dtype if preset else "auto"),
        tree=TreeConfig(*(base_value if flag is None else flag for flag, base_value in (
            (args.depth, base.depth), (args.top_k, base.top_k), (args.total_tokens, base.total_tokens)))),
        chat=args.chat if args.chat is not None else (preset.chat if preset else None),
        drafter=getattr(args, "drafter", None) or (preset.drafter if preset else "eagle3"),
    )
    choice.tree.validate()  # a flag of 0 is refused, never replaced by the preset's value
    return choice
