"""The flags that the command-line tools (and the app) share, declared once.

Each group fills one of the library's configs: the target / head pair and how to load it,
the draft tree (TreeConfig, defaults from the pair's preset: see presets.choose_pair), and
sampling with the generation budget (SamplingConfig, GenerationConfig).
"""

from __future__ import annotations

import argparse

from eagle3.acceptance import SamplingConfig
from eagle3.budget import NODE_BUDGETS
from eagle3.decoding import GenerationConfig
from eagle3.drafters import DRAFTERS
from eagle3.lookup import LookupConfig
from eagle3.presets import DEFAULT


def add_pair_options(parser: argparse.ArgumentParser, target_default: str | None = DEFAULT.target,
                     draft_default: str | None = None, target_note: str = "default: checkpoints/smollm2",
                     chat: bool = True, head: bool = True) -> None:
    """--target --draft --device --dtype --attention --trust-remote-code, and --draft-dtype --compile --chat."""
    parser.add_argument("--target", default=target_default,
                        help=f"a target model directory, .gguf file or hub id ({target_note})")
    parser.add_argument("--draft", default=draft_default, help="the EAGLE-3 head (default: the preset's for --target)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto")
    parser.add_argument("--dtype", default=None,
                        help="the target's dtype: float32, bfloat16, float16 or auto (default: the preset's, else "
                             "bfloat16 on CUDA and CPUs with exact bfloat16 (AVX2 and FMA, AVX-512 BF16 or AMX, with the C++ build), float32 elsewhere)")
    parser.add_argument("--attention", default="auto",
                        help="the target's attention: auto (eagle3.invariant's batch-invariant one on a CPU in "
                             "16-bit floats, and in float32 where the C++ float32 product runs, which keeps "
                             "greedy output exact; else the model's own), "
                             "eagle3_invariant, sdpa or eager")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="let targets run the Python code their hub repository ships (off: only transformers' own)")
    if head:
        parser.add_argument("--draft-dtype", default="auto", help="the head's dtype (auto: bfloat16 where it is fast)")
        parser.add_argument("--compile", action="store_true",
                            help="torch.compile the decoder layers of the target and the head (dynamic shapes)")
    if chat:
        parser.add_argument("--chat", action=argparse.BooleanOptionalAction, default=None,
                            help="render prompts through the tokenizer's chat template (default: the preset's mode, "
                                 "else when the tokenizer has a template)")


def add_drafter_options(parser: argparse.ArgumentParser) -> None:
    """--drafter --lookup-tokens (eagle3.lookup)."""
    parser.add_argument("--drafter", choices=DRAFTERS, default=None,
                        help="eagle3: the head's tree; lookup: copies from the context, no head; hybrid: both in one "
                             "tree; plain: no drafts, the baseline (default: the preset's)")
    parser.add_argument("--lookup-tokens", type=int, default=LookupConfig.tokens,
                        help="the longest copy chain (lookup, hybrid)")


def add_tree_options(parser: argparse.ArgumentParser) -> None:
    """--depth --top-k --total-tokens (TreeConfig; unset ones come from the pair's preset), --node-budget."""
    parser.add_argument("--depth", type=int, default=None,
                        help="draft levels, the most drafts one round accepts (default: the preset's tree, else "
                             "TreeConfig's)")
    parser.add_argument("--top-k", type=int, default=None, help="children per expanded node, and the frontier's width")
    parser.add_argument("--total-tokens", type=int, default=None,
                        help="tree nodes verified per round, root included (with --node-budget measured: the most)")
    parser.add_argument("--node-budget", choices=NODE_BUDGETS, default="measured",
                        help="measured: each round verifies as many of its best nodes as pay for themselves on this "
                             "device's measured verification costs (eagle3.budget); fixed: always --total-tokens")


def add_generation_options(parser: argparse.ArgumentParser, seed: int | None = None) -> None:
    """--max-new-tokens --temperature --top-p --sample-top-k --seed (GenerationConfig)."""
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.0, help="0 is greedy (default)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling threshold in (0, 1]")
    parser.add_argument("--sample-top-k", type=int, default=0, help="sample among the k most likely tokens (0: all)")
    parser.add_argument("--seed", type=int, default=seed, help=f"seed for sampling (default: {seed})")


def generation_config(args: argparse.Namespace) -> GenerationConfig:
    return GenerationConfig(args.max_new_tokens, SamplingConfig(args.temperature, args.top_p, args.sample_top_k),
                            args.seed)
