"""Generate from the command line, with every token coloured by its fate.

    python -m eagle3.generate --prompt "What is a prime number?"      # the app's default pair, as a chat
    python -m eagle3.generate --target DIR --draft DIR --prompt TEXT --temperature 0.7 --seed 1
    python -m eagle3.generate --prompt "What is a prime?" --prompt "Name three rivers."   # a batch

A target that is one of the presets (by default SmolLM2-135M-Instruct in checkpoints/)
brings its head, dtype, tree and chat mode as defaults; flags override them. Several
--prompt flags decode together as one batch (beyond eagle3.batch's limit for the device,
plainly); each reply is printed, with its summary, when its row finishes.
"""

from __future__ import annotations

import argparse
import os
import sys

import transformers

from eagle3.acceptance import TokenState
from eagle3.batch import batch_drafter
from eagle3.budget import node_budget
from eagle3.checkpoint import load_head
from eagle3.compiled import compile_decoding
from eagle3.decoding import decode
from eagle3.drafters import HEAD_DRAFTERS, drafter_named
from eagle3.lookup import COPIED, LookupConfig
from eagle3.options import (add_drafter_options, add_generation_options, add_pair_options, add_tree_options,
                            generation_config)
from eagle3.presets import choose_pair
from eagle3.prompts import chat_ids
from eagle3.stats import RunStats, rounds_text
from eagle3.target import load_target

ANSI = {
    TokenState.ACCEPTED: "\033[32m",  # green
    TokenState.REJECTED: "\033[9;31m",  # struck through, red
    TokenState.RESAMPLED: "\033[33m",  # yellow
    TokenState.BONUS: "\033[36m",  # cyan
}
UNDERLINE = "\033[4m"  # drafted by copying from the context (--drafter lookup / hybrid)
RESET = "\033[0m"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m eagle3.generate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", action="append",
                        help="prompt text; several decode together as one batch")
    source.add_argument("--prompt-file", help="read the prompt from a UTF-8 text file")
    add_pair_options(parser)
    add_drafter_options(parser)
    add_tree_options(parser)
    add_generation_options(parser)
    parser.add_argument("--plain", action="store_true", help="plain decoding (the baseline): --drafter plain")
    parser.add_argument("--hide-rejected", action="store_true", help="do not show rejected draft tokens")
    return parser.parse_args(argv)


def read_prompts(args: argparse.Namespace, tokenizer, chat: bool) -> list[tuple[str, str | list[int]]]:
    """Each prompt as shown, and as decoded (a chat prompt's ids, rendered with the template)."""
    if args.prompt_file is not None:
        try:
            with open(args.prompt_file, encoding="utf-8") as f:
                prompts = [f.read()]
        except UnicodeDecodeError as error:
            raise ValueError(f"prompt file: '{args.prompt_file}' is not UTF-8 text ({error.reason} at byte {error.start})") from error
        except OSError as error:
            raise FileNotFoundError(f"prompt file: cannot read '{args.prompt_file}' ({error.strerror})") from error
    else:
        prompts = args.prompt
    if chat:
        return [(p + "\n", chat_ids(tokenizer, [], p)) for p in prompts]  # shown as typed, not templated
    return [(p, p) for p in prompts]


def render(token, color: bool, show_rejected: bool) -> str:
    if not color:
        return "" if token.state is TokenState.REJECTED else token.text
    if token.state is TokenState.REJECTED and not show_rejected:
        return ""
    copied = UNDERLINE if token.source in COPIED else ""
    return f"{ANSI[token.state]}{copied}{token.text}{RESET}"


def summary(stats: RunStats, plain: bool) -> str:
    parts = [f"new tokens {stats.new_tokens}"]
    if not plain:
        parts += [rounds_text(stats), f"tau {stats.tau:.2f}", f"nodes per round {stats.nodes_per_round:.1f}"]
    parts += [f"{stats.tokens_per_s:.1f} tokens/s", f"stop {stats.stop_reason}"]
    return " | ".join(parts)


def main(argv=None) -> int:
    args = parse_args(argv)
    transformers.utils.logging.disable_progress_bar()  # the output is the continuation, nothing else
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    try:
        pair = choose_pair(args)
        name = "plain" if args.plain else pair.drafter
        target = load_target(args.target, args.device, pair.dtype, args.trust_remote_code, args.attention)
        prompts = read_prompts(args, target.tokenizer, pair.chat_for(target.tokenizer))
        config = generation_config(args)
        uses_head = name in HEAD_DRAFTERS
        if uses_head and pair.draft is None:
            raise ValueError(f"--draft: no head is known for --target {args.target}; name one, or use --plain "
                             "or --drafter lookup")
        head = load_head(pair.draft, target, args.draft_dtype) if uses_head else None
        if args.compile:
            compile_decoding(target, head)
        budget = node_budget(args.node_budget, target, config) if name != "plain" else None
        drafter = drafter_named(name, head, pair.tree, LookupConfig(tokens=args.lookup_tokens), budget=budget)
        drafter = batch_drafter(drafter, len(prompts), target.device)
        stats = [RunStats() for _ in prompts]
        replies = [[] for _ in prompts]
        if len(prompts) == 1:
            sys.stdout.write(prompts[0][0])
        for event in decode(target, [p for _, p in prompts], drafter, config):
            stats[event.row].add(event)
            shown = "".join(render(t, color, not args.hide_rejected) for t in event.tokens)
            if len(prompts) == 1:  # streamed as it comes
                sys.stdout.write(shown)
                sys.stdout.flush()
            else:  # each reply once its row finishes
                replies[event.row].append(shown)
                if event.finished:
                    row = event.row
                    print(f"[{row + 1}] {prompts[row][0]}{''.join(replies[row])}\n"
                          f"[{row + 1}] {summary(stats[row], name == 'plain')}", flush=True)
    except (ValueError, FileNotFoundError) as error:
        print(f"\nerror: {error}", file=sys.stderr)
        return 2
    if len(prompts) == 1:
        print()
        print(summary(stats[0], name == "plain"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
