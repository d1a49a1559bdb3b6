"""The decode loop: speculative decoding and the plain baseline, for one prompt or a batch.

One loop (`decode`) serves every case; what is drafted is the drafter's business
(eagle3.drafters), and plain decoding is the drafter that proposes the root alone. Each
round, with the target cache holding every position before the root:
    draft:   the drafter proposes a tree under each row's root
    verify:  one target forward over [root + tree] with the tree mask and tree positions
    settle:  walk the tree (greedy or sampled), then keep only the accepted positions
    emit:    one RoundEvent per row, cut by the stopping rules (EOS, max_new_tokens, context)
The host waits for the device twice a round at most, once per read (eagle3.transfer): the
drafted trees (the head drafter's) and the verdicts the walks need; everything else the
host knows already, and what the device needs from it is sent without waiting. Each time is
read just after one of those waits, so timing adds none.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from eagle3 import transfer
from eagle3.acceptance import (Acceptance, SampledDraws, SamplingConfig, TokenState, accept_greedy, accept_sampled,
                               sampled_draws, target_probs)
from eagle3.checks import integer_in
from eagle3.drafters import Drafter
from eagle3.events import RoundEvent, Token
from eagle3.kv_cache import KVCache
from eagle3.native import argmax
from eagle3.target import Target
from eagle3.text import IncrementalDetokenizer
from eagle3.tree import DraftTree, stack_trees

MAX_NEW_TOKENS_LIMIT = 1_000_000


@dataclass
class GenerationConfig:
    max_new_tokens: int = 128
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    seed: int | None = None  # None draws from torch's global generator
    max_context: int | None = None  # prompt + output tokens; None: the target's limit

    def validate(self) -> None:
        integer_in("max_new_tokens", self.max_new_tokens, 1, MAX_NEW_TOKENS_LIMIT)
        if self.max_context is not None:
            integer_in("max_context", self.max_context, 2, MAX_NEW_TOKENS_LIMIT)
        self.sampling.validate()


def encode_prompt(target: Target, prompt: str | Sequence[int]) -> list[int]:
    if isinstance(prompt, str):
        if target.tokenizer is None:
            raise ValueError("prompt: text was given but the target has no tokenizer; pass token ids")
        ids = target.tokenizer(prompt).input_ids
    else:
        ids = [int(i) for i in prompt]
    if not ids:
        raise ValueError("prompt: empty; it must have at least one token")
    bad = [i for i in ids if not 0 <= i < target.vocab_size]
    if bad:
        raise ValueError(f"prompt: token id {bad[0]} is outside the vocabulary [0, {target.vocab_size})")
    return ids


class Run:
    """One prompt's decode: its budget, stopping rules, text and generator."""

    def __init__(self, target: Target, prompt: str | Sequence[int], config: GenerationConfig):
        config.validate()
        self.prompt_ids = encode_prompt(target, prompt)
        self.device = target.device
        self.sampling = config.sampling
        max_context = config.max_context or target.max_context
        room = max_context - len(self.prompt_ids)
        if room < 1:
            raise ValueError(
                f"prompt: {len(self.prompt_ids)} tokens leave no room in the {max_context}-token context"
            )
        self.budget = min(config.max_new_tokens, room)
        self.budget_reason = "max_new_tokens" if config.max_new_tokens <= room else "context"
        self.eos = target.eos_token_ids
        self.detokenizer = IncrementalDetokenizer(target.tokenizer, self.prompt_ids)
        self.generator = None
        if config.seed is not None:
            self.generator = torch.Generator(self.device).manual_seed(config.seed)
        self.emitted = 0
        self.index = 0

    @property
    def remaining(self) -> int:
        return self.budget - self.emitted

    def accept(self, tree: DraftTree, verdict: list) -> Acceptance:
        """Walk a verified tree with its verdict from read_verdicts."""
        if self.sampling.greedy:
            return accept_greedy(tree, verdict)
        return accept_sampled(tree, SampledDraws(*verdict))

    def emit(self, row: int, settled: Settled, draft_s: float, verify_s: float, verify_end: float) -> RoundEvent:
        """A round's event: its settled tokens, cut by the stopping rules."""
        tokens, stop = [], None
        for token_id, state, source in settled.candidates:
            if state is TokenState.REJECTED:
                tokens.append(Token(token_id, self.detokenizer.token_text(token_id), state, source))
                continue
            self.emitted += 1
            tokens.append(Token(token_id, self.detokenizer.push(token_id), state, source))
            if token_id in self.eos:
                stop = "eos"
            elif self.remaining == 0:
                stop = self.budget_reason
            if stop:
                break
        tree = settled.tree
        event = RoundEvent(
            index=self.index, row=row, tokens=tokens, tree=tree if tree is not None and len(tree) > 1 else None,
            accepted_path=settled.path, draft_s=draft_s, verify_s=verify_s,
            bookkeeping_s=time.perf_counter() - verify_end, depth=tree.depth if tree else 0,
            finished=stop is not None, stop_reason=stop,
        )
        self.index += 1
        return event


@dataclass
class Settled:
    """One row's outcome of a target forward: the prefill's or a verified tree's."""

    tree: DraftTree | None  # the verified tree; None for the prefill
    path: list[int]  # accepted nodes, root excluded
    next_features: torch.Tensor | None  # [m, 3H] the draft's next pairs: features of the kept positions...
    next_tokens: list[int]  # ...and the m tokens after them; the last is the next root
    candidates: list[tuple[int, TokenState, str | None]]  # the round's tokens for its event, with their drafter
    kept: list[int] | None = None  # tree nodes whose keys stay in the target cache, root first

    @property
    def output_ids(self) -> list[int]:
        """The tokens this forward adds to the output (before the stopping rules)."""
        return [token for token, state, _ in self.candidates if state is not TokenState.REJECTED]


def prefilled(prompt_ids: list[int], features: torch.Tensor | None, root: int) -> Settled:
    """The prefill as a settled forward: every prompt position is a pair for the head."""
    return Settled(None, [], features, prompt_ids[1:] + [root], [(root, TokenState.BONUS, None)])


def read_verdicts(logits: torch.Tensor, trees: list[DraftTree], runs: list[Run]) -> list[list]:
    """What each row's walk needs from its logits [B, n, V] (n at least its tree's size), in
    one read: the target's argmax at each node (greedy), or sampled_draws' draws."""
    if runs[0].sampling.greedy:
        return transfer.to_host(argmax(logits))[0]
    return transfer.to_host(*[sampled_draws(target_probs(logits[b, : len(tree)], run.sampling), tree, run.generator)
                              for b, (tree, run) in enumerate(zip(trees, runs))])


def settle(run: Run, draft: DraftTree, verdict: list, features: torch.Tensor | None) -> Settled:
    """Accept on one verified tree with its verdict; features [n, 3H] of its nodes (or None)."""
    result = run.accept(draft, verdict)
    kept = [0] + result.path
    next_features = features[transfer.to_device(kept, features.device)] if features is not None else None
    next_tokens = [draft.tokens[node] for node in result.path] + [result.next_token]
    candidates = [(draft.tokens[node], TokenState.ACCEPTED, draft.source(node)) for node in result.path]
    if result.rejected:  # the draft's best guess where the walk stopped
        candidates.append((draft.tokens[result.rejected[0]], TokenState.REJECTED, draft.source(result.rejected[0])))
    candidates.append((result.next_token, result.next_state, None))
    return Settled(draft, result.path, next_features, next_tokens, candidates, kept)


@dataclass
class Row:
    """One sequence of a batch, between rounds."""

    index: int  # its prompt's place in the caller's list
    run: Run
    length: int  # valid target cache positions: everything before the root
    root: int  # the last token the target produced


def prefill(target: Target, prompts: Sequence[Sequence[int]], cache: KVCache, capture: bool = False):
    """Prompts of any lengths in one forward into an empty cache: right-padded, each row causal
    over its own tokens. Returns input_ids [B, W] (0 after each prompt), the logits at each
    row's last prompt position [B, V] and the forward's TargetOutput (features [B, W, 3H] with
    capture). The padding's keys are written too; the caller's lengths mask them."""
    device = target.device
    lengths = [len(prompt) for prompt in prompts]
    width = max(lengths)
    input_ids = transfer.to_device([list(prompt) + [0] * (width - len(prompt)) for prompt in prompts], device)
    positions = torch.arange(width, device=device).expand(len(prompts), width)
    if min(lengths) == width:  # no padding (one prompt, always): the model's own causal mask, the last logits
        out = target.forward(input_ids, positions, cache, logits_to_keep=1, capture=capture)
        return input_ids, out.logits[:, -1], out
    causal = torch.ones(width, width, dtype=torch.bool, device=device).tril().expand(len(prompts), width, width)
    # Logits only at the positions where some row's prompt ends: at most B of the W.
    ends = sorted({length - 1 for length in lengths})
    keep, where = transfer.to_device(ends, device), transfer.to_device([ends.index(n - 1) for n in lengths], device)
    out = target.forward(input_ids, positions, cache, target.attention_mask(causal, positions, positions),
                         logits_to_keep=keep, capture=capture)
    return input_ids, out.logits[torch.arange(len(prompts), device=device), where], out


def as_prompts(prompts: str | Sequence[int] | Sequence[str | Sequence[int]]) -> list[str | Sequence[int]]:
    """One prompt (text, or token ids) or a list of them, as a list."""
    if isinstance(prompts, torch.Tensor):
        prompts = prompts.tolist()
    if isinstance(prompts, str) or not prompts or not isinstance(prompts[0], (str, Sequence)):
        return [prompts]  # one prompt ([] is an empty one, refused as such)
    return list(prompts)


@torch.inference_mode()
def decode(
    target: Target,
    prompts: str | Sequence[int] | Sequence[str | Sequence[int]],
    drafter: Drafter | None = None,
    config: GenerationConfig | None = None,
) -> Iterator[RoundEvent]:
    """Decode one prompt (text or token ids) or a batch of them: an event per row per round,
    `event.row` naming its prompt. Lossless per row: greedy output equals plain greedy
    decoding, sampled output follows the target's (processed) distribution. The drafter
    (eagle3.drafters) proposes each round's trees; None drafts nothing (plain decoding).

    The rows share one cache but keep their own lengths: row b's valid keys are [0, L_b), and
    every forward writes its new keys at the shared offset W = max L_b, where the per-row mask
    finds them. After a round, row b's accepted positions are packed right after L_b, so a
    shorter row only leaves a masked gap. The rows draft together, are verified in one target
    forward, and accept, stop and leave the batch on their own.
    """
    drafter, config = drafter or Drafter(), config or GenerationConfig()
    runs = [Run(target, prompt, config) for prompt in as_prompts(prompts)]
    device, capture = target.device, drafter.captures_features
    longest = max(len(run.prompt_ids) + run.budget for run in runs)
    cache = target.new_cache(longest + drafter.nodes)
    drafter.start([run.prompt_ids for run in runs], longest)

    start = time.perf_counter()
    _, last_logits, out = prefill(target, [run.prompt_ids for run in runs], cache, capture=capture)
    # The target's token after each prompt: the verdict on a tree that is the prompt's last token alone.
    ends = [DraftTree.root_only(run.prompt_ids[-1]) for run in runs]
    verdicts = read_verdicts(last_logits[:, None], ends, runs)
    verify_end = time.perf_counter()
    rows, settled = [], []
    for b, (run, end, verdict) in enumerate(zip(runs, ends, verdicts)):
        n, root = len(run.prompt_ids), run.accept(end, verdict).next_token
        rows.append(Row(b, run, n, root))
        settled.append(prefilled(run.prompt_ids, out.features[b, :n] if capture else None, root))
    cache.truncate(max(row.length for row in rows))
    # A round's events are yielded once its bookkeeping is done.
    events = [row.run.emit(row.index, done, 0.0, verify_end - start, verify_end) for row, done in zip(rows, settled)]
    drafter.observe(settled, time.perf_counter() - start)
    rows = drop_finished(rows, events, cache, drafter, device)
    yield from events

    while rows:
        start = time.perf_counter()
        drafts = drafter.propose([row.root for row in rows], [row.run.remaining for row in rows])
        draft_end = time.perf_counter()
        written = cache.length
        tokens, depths, ancestors = stack_trees(drafts, device)
        lengths = transfer.to_device([row.length for row in rows], device)
        positions = lengths[:, None] + depths
        out = target.forward(tokens, positions, cache, target.rows_tree_mask(lengths, written, positions, ancestors),
                             capture=capture)
        verdicts = read_verdicts(out.logits, drafts, [row.run for row in rows])
        verify_end = time.perf_counter()
        settled = [settle(row.run, draft, verdict, out.features[b, : len(draft)] if capture else None)
                   for b, (row, draft, verdict) in enumerate(zip(rows, drafts, verdicts))]
        cache.keep_rows([row.length for row in rows], written, [done.kept for done in settled])
        for row, done in zip(rows, settled):
            row.length += len(done.kept)
            row.root = done.next_tokens[-1]
        events = [row.run.emit(row.index, done, draft_end - start, verify_end - draft_end, verify_end)
                  for row, done in zip(rows, settled)]
        drafter.observe(settled, time.perf_counter() - start)
        rows = drop_finished(rows, events, cache, drafter, device)
        yield from events


def drop_finished(rows: list[Row], events: list[RoundEvent], cache: KVCache, drafter: Drafter,
                  device: torch.device) -> list[Row]:
    """The rows still running, their cache rows selected."""
    keep = [b for b, event in enumerate(events) if not event.finished]
    if len(keep) == len(rows) or not keep:
        return [rows[b] for b in keep]
    rows = [rows[b] for b in keep]
    cache.select_rows(transfer.to_device(keep, device))
    # The shared length shrinks to the longest live row: a finished row may have kept drafts
    # past its budget, which the cache's capacity does not allow for.
    cache.truncate(max(row.length for row in rows))
    drafter.keep(keep)
    return rows
