"""The decode loops: EAGLE-3 speculative decoding and the plain baseline.

Both are generators of RoundEvent with the same stopping rules (EOS, max_new_tokens, the
context limit), so whatever consumes one can consume the other.

Speculative round, with the target cache holding every position before the root:
    draft:   the head consumes the new (feature, next token) pairs and drafts a tree
    verify:  one target forward over [root + tree] with the tree mask and tree positions
    accept:  walk the tree (greedy or sampled), then keep only the accepted positions
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from eagle3.acceptance import SamplingConfig, TokenState, accept_greedy, accept_sampled, sample, target_probs
from eagle3.adaptive import AdaptiveDepth
from eagle3.events import RoundEvent, Token, TreeView
from eagle3.head import Eagle3Head
from eagle3.kv_cache import KVCache
from eagle3.lookup import COPIED, DRAFTERS, ContextIndex, CopyHitRate, LookupConfig, hybrid_tree
from eagle3.stats import tokens_per_round
from eagle3.target import Target
from eagle3.text import IncrementalDetokenizer
from eagle3.tree import DraftTree, TreeConfig, draft_tree

MAX_NEW_TOKENS_LIMIT = 1_000_000


@dataclass
class GenerationConfig:
    max_new_tokens: int = 128
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    seed: int | None = None  # None draws from torch's global generator
    max_context: int | None = None  # prompt + output tokens; None: the target's limit

    def validate(self) -> None:
        if not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS_LIMIT:
            raise ValueError(f"max_new_tokens: {self.max_new_tokens} is outside [1, {MAX_NEW_TOKENS_LIMIT}]")
        if self.max_context is not None and self.max_context < 2:
            raise ValueError(f"max_context: {self.max_context} is below 2")
        self.sampling.validate()


def clock(device: torch.device) -> float:
    """Wall time after the device's queued work is done."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


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
    """What plain and speculative decoding share: budget, stopping, text, statistics."""

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
        self.output: list[int] = []
        self.index = self.rounds = self.accepted = 0
        self.elapsed = 0.0

    @property
    def remaining(self) -> int:
        return self.budget - len(self.output)

    def pick(self, logits: torch.Tensor) -> int:
        """The target's next token from its logits [V]."""
        if self.sampling.greedy:
            return int(logits.argmax())
        return sample(target_probs(logits[None], self.sampling)[0], self.generator)

    def emit(self, candidates, tree: DraftTree | None, path: list[int], draft_s: float, verify_s: float,
             verify_end: float, depth: int = 0) -> RoundEvent:
        """Turn a round's (token id, state, source) list into an event, applying the stopping rules."""
        tokens, stop = [], None
        for token_id, state, source in candidates:
            if state is TokenState.REJECTED:
                tokens.append(Token(token_id, self.detokenizer.token_text(token_id), state, source))
                continue
            self.output.append(token_id)
            tokens.append(Token(token_id, self.detokenizer.push(token_id), state, source))
            if token_id in self.eos:
                stop = "eos"
            elif self.remaining == 0:
                stop = self.budget_reason
            if stop:
                break
        if self.index > 0:
            self.rounds += 1
            self.accepted += len(path)
        view = None
        if tree is not None:
            view = TreeView(tree.tokens.tolist(), tree.parents, tree.depths.tolist(), tree.scores, tree.sources)
        bookkeeping_s = clock(self.device) - verify_end
        self.elapsed += draft_s + verify_s + bookkeeping_s
        event = RoundEvent(
            index=self.index, tokens=tokens, tree=view, accepted_path=path, draft_s=draft_s, verify_s=verify_s,
            bookkeeping_s=bookkeeping_s, new_tokens=len(self.output), rounds=self.rounds,
            tau=tokens_per_round(self.accepted, self.rounds), elapsed_s=self.elapsed,
            finished=stop is not None, stop_reason=stop, output_ids=self.output, depth=depth,
        )
        self.index += 1
        return event


@dataclass
class Settled:
    """A verified tree after acceptance."""

    path: list[int]  # accepted nodes, root excluded
    kept: torch.Tensor  # [1 + len(path)] node indices whose keys stay in the target cache, root first
    next_features: torch.Tensor | None  # [1 + len(path), 3H] the draft's next pairs: features of the kept nodes...
    next_tokens: torch.Tensor  # [1 + len(path)] ...and the token after each; the last is the next root
    candidates: list[tuple[int, TokenState, str | None]]  # the round's tokens for its event, with their drafter


def settle(run: Run, draft: DraftTree, logits: torch.Tensor, features: torch.Tensor | None) -> Settled:
    """Accept on one verified tree. logits [n, V] and features [n, 3H] (or None) of its nodes."""
    if run.sampling.greedy:
        result = accept_greedy(draft, logits)
    else:
        result = accept_sampled(draft, target_probs(logits, run.sampling), run.generator)
    kept = torch.tensor([0] + result.path, device=logits.device)
    next_features = features[kept] if features is not None else None
    next_tokens = torch.cat([draft.tokens[kept[1:]], kept.new_tensor([result.next_token])])
    tokens = draft.tokens.tolist()
    candidates = [(tokens[node], TokenState.ACCEPTED, draft.source(node)) for node in result.path]
    if result.rejected:  # the draft's best guess where the walk stopped
        candidates.append((tokens[result.rejected[0]], TokenState.REJECTED, draft.source(result.rejected[0])))
    candidates.append((result.next_token, result.next_state, None))
    return Settled(result.path, kept, next_features, next_tokens, candidates)


@torch.inference_mode()
def speculative_decode(
    target: Target,
    head: Eagle3Head | None,
    prompt: str | Sequence[int],
    tree: TreeConfig | None = None,
    config: GenerationConfig | None = None,
    adaptive: AdaptiveDepth | None = None,
    drafter: str = "eagle3",
    lookup: LookupConfig | None = None,
) -> Iterator[RoundEvent]:
    """Speculative decoding, one event per round. Lossless: greedy output equals plain greedy
    decoding, sampled output follows the target's (processed) distribution.

    drafter: "eagle3" drafts with the head; "lookup" copies from the context (no head: see
    eagle3.lookup); "hybrid" merges a copy chain into the head's tree, verified in the same
    forward. With `adaptive`, each round's depth (and node budget, at most
    tree.total_tokens) comes from the policy."""
    tree, config, lookup = tree or TreeConfig(), config or GenerationConfig(), lookup or LookupConfig()
    if drafter not in DRAFTERS:
        raise ValueError(f"drafter: {drafter!r} is not one of {', '.join(DRAFTERS)}")
    uses_head, copies = drafter != "lookup", drafter != "eagle3"
    if uses_head:
        if head is None:
            raise ValueError(f"drafter: {drafter} needs an EAGLE-3 head; use drafter lookup without one")
        tree.validate(head.config.draft_vocab_size)
    lookup.validate()
    run = Run(target, prompt, config)
    device, n = target.device, len(run.prompt_ids)
    max_depth = max(tree.depth, adaptive.max_depth if adaptive else 0)
    nodes = max(tree.total_tokens if uses_head else 1, lookup.tokens + 1 if copies else 1)
    cache = target.new_cache(n + run.budget + nodes)
    # The draft cache also holds the tree's keys while drafting: top_k per level.
    draft_cache = KVCache(1, n + run.budget + tree.top_k * max_depth) if uses_head else None
    context = ContextIndex(run.prompt_ids, lookup) if copies else None
    hits = CopyHitRate()

    start = clock(device)
    prompt_ids = torch.tensor(run.prompt_ids, device=device)
    out = target.forward(prompt_ids[None], torch.arange(n, device=device)[None], cache, logits_to_keep=1,
                         capture=uses_head)
    root = run.pick(out.logits[0, -1])
    verify_end = clock(device)
    event = run.emit([(root, TokenState.BONUS, None)], None, [], 0.0, verify_end - start, verify_end)
    yield event
    # Draft pairs not yet consumed: the target feature at each position and the token after it.
    features, next_tokens = out.features[0] if uses_head else None, torch.cat([prompt_ids[1:], prompt_ids.new_tensor([root])])

    while not event.finished:
        start = clock(device)
        round_tree = adaptive.tree(tree) if adaptive else tree
        depth = min(round_tree.depth, run.remaining - 1)
        draft = DraftTree.root_only(next_tokens[-1:])  # with no room to draft: a plain step, and the run ends with it
        chain = []
        if copies:
            context.extend(run.output[len(context) - n:])
            chain = context.propose(min(lookup.tokens, run.remaining - 1))
        # While the target accepts whole copy chains, the head sits the round out (its drafting
        # would cost more than the nodes it adds); it catches up on the pairs next time it drafts.
        head_sits_out = uses_head and bool(chain) and hits.streak  # a chain implies room to draft
        head_drafts = uses_head and depth > 0 and not head_sits_out
        if head_drafts:
            draft = draft_tree(head, draft_cache, features, next_tokens, round_tree, depth)
        if chain:
            draft = hybrid_tree(draft, chain, hits.rate, round_tree.total_tokens - 1 if head_drafts else len(chain))
        if copies:
            depth = int(draft.depths.max())
        draft_end = clock(device)

        prefix = cache.length
        positions = prefix + draft.depths
        mask = target.tree_mask(prefix, positions, draft.ancestors)
        out = target.forward(draft.tokens[None], positions[None], cache, mask, capture=uses_head)
        verify_end = clock(device)

        settled = settle(run, draft, out.logits[0], out.features[0] if uses_head else None)
        cache.keep(prefix, settled.kept)
        if head_sits_out:  # the head has not consumed its pairs: they wait for its next draft
            features = torch.cat([features, settled.next_features])
            next_tokens = torch.cat([next_tokens, settled.next_tokens])
        else:
            features, next_tokens = settled.next_features, settled.next_tokens
        event = run.emit(settled.candidates, draft, settled.path, draft_end - start, verify_end - draft_end, verify_end,
                         depth)
        if copies:
            copied = [source in COPIED for source in draft.sources or ()]
            hits.observe(sum(copied[node] for node in settled.path) if copied else 0, sum(copied))
        if adaptive:
            adaptive.observe(depth, len(settled.path), event.draft_s + event.verify_s + event.bookkeeping_s)
        yield event


@torch.inference_mode()
def plain_decode(
    target: Target,
    prompt: str | Sequence[int],
    config: GenerationConfig | None = None,
) -> Iterator[RoundEvent]:
    """The baseline: one target forward per token, same stopping rules and events."""
    config = config or GenerationConfig()
    run = Run(target, prompt, config)
    device, n = target.device, len(run.prompt_ids)
    cache = target.new_cache(n + run.budget)
    input_ids = torch.tensor(run.prompt_ids, device=device)[None]
    positions = torch.arange(n, device=device)[None]
    while True:
        start = clock(device)
        out = target.forward(input_ids, positions, cache, logits_to_keep=1)
        token = run.pick(out.logits[0, -1])
        verify_end = clock(device)
        event = run.emit([(token, TokenState.BONUS, None)], None, [], 0.0, verify_end - start, verify_end)
        yield event
        if event.finished:
            return
        input_ids = input_ids.new_tensor([[token]])
        positions = positions.new_tensor([[cache.length]])
