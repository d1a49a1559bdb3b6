"""The decode loop: EAGLE-3 speculative decoding and the plain baseline, for one prompt or a batch.

One loop (`decode_rows`) serves every case: speculative decoding with the head, context
copies or both (`drafter`), and plain decoding, whose rounds verify the root alone. Each
yields RoundEvents with the same stopping rules (EOS, max_new_tokens, the context limit),
so whatever consumes one can consume the other; `speculative_decode` and `plain_decode`
are its one-prompt views.

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
from eagle3.tree import DraftTree, TreeConfig, draft_trees

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


@dataclass
class Row:
    """One sequence of a batch, between rounds."""

    index: int  # its prompt's place in the caller's list
    run: Run
    length: int  # valid target cache positions: everything before the root
    next_tokens: torch.Tensor  # [m] the token after each position the head has not consumed; the last is the root
    features: torch.Tensor | None = None  # [m, 3H] the target's features at those positions
    draft_length: int = 0  # valid draft cache positions
    context: ContextIndex | None = None  # the copy drafter's index of the prompt and output
    hits: CopyHitRate = field(default_factory=CopyHitRate)


def stack_trees(drafts: list[DraftTree]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Trees of up to n nodes as tokens [B, n], depths [B, n] and ancestors [B, n, n]; a
    smaller tree is padded with nodes that see only the prefix and themselves (their keys are
    never kept and their logits never read)."""
    n = max(len(d) for d in drafts)
    if all(len(d) == n for d in drafts):
        return (torch.stack([d.tokens for d in drafts]), torch.stack([d.depths for d in drafts]),
                torch.stack([d.ancestors for d in drafts]))
    device = drafts[0].tokens.device
    tokens = torch.zeros(len(drafts), n, dtype=torch.long, device=device)
    depths = torch.zeros(len(drafts), n, dtype=torch.long, device=device)
    ancestors = torch.eye(n, dtype=torch.bool, device=device).repeat(len(drafts), 1, 1)
    for row, draft in enumerate(drafts):
        m = len(draft)
        tokens[row, :m], depths[row, :m], ancestors[row, :m, :m] = draft.tokens, draft.depths, draft.ancestors
    return tokens, depths, ancestors


def prefill(target: Target, prompts: Sequence[Sequence[int]], cache: KVCache, capture: bool = False):
    """Prompts of any lengths in one forward into an empty cache: right-padded, each row causal
    over its own tokens. Returns input_ids [B, W] (0 after each prompt), the logits at each
    row's last prompt position [B, V] and the forward's TargetOutput (features [B, W, 3H] with
    capture). The padding's keys are written too; the caller's lengths mask them."""
    device = target.device
    lengths = [len(prompt) for prompt in prompts]
    width = max(lengths)
    input_ids = torch.zeros(len(prompts), width, dtype=torch.long, device=device)
    for row, prompt in enumerate(prompts):
        input_ids[row, : lengths[row]] = torch.as_tensor(prompt, device=device)
    positions = torch.arange(width, device=device).expand(len(prompts), width)
    if min(lengths) == width:  # no padding (one prompt, always): the model's own causal mask, the last logits
        out = target.forward(input_ids, positions, cache, logits_to_keep=1, capture=capture)
        return input_ids, out.logits[:, -1], out
    causal = torch.ones(width, width, dtype=torch.bool, device=device).tril().expand(len(prompts), width, width)
    # Logits only from the shortest prompt's last position on: every row's last one is there.
    kept = width - min(lengths) + 1
    out = target.forward(input_ids, positions, cache, target.attention_mask(causal, positions, positions),
                         logits_to_keep=kept, capture=capture)
    last = torch.tensor(lengths, device=device) - 1 - (width - kept)
    return input_ids, out.logits[torch.arange(len(prompts), device=device), last], out


@torch.inference_mode()
def decode_rows(
    target: Target,
    head: Eagle3Head | None,
    prompts: Sequence[str | Sequence[int]],
    drafter: str | None,
    tree: TreeConfig | None = None,
    config: GenerationConfig | None = None,
    adaptive: AdaptiveDepth | None = None,
    lookup: LookupConfig | None = None,
) -> Iterator[tuple[int, RoundEvent]]:
    """The decode loop, for one prompt or several decoded together: (prompt index, event) for
    every row of every round. Lossless per row: greedy output equals plain greedy decoding,
    sampled output follows the target's (processed) distribution.

    drafter: "eagle3" drafts with the head; "lookup" copies from the context (no head: see
    eagle3.lookup); "hybrid" merges a copy chain into the head's tree; None drafts nothing
    (plain decoding: each round verifies the root alone). With `adaptive` (one prompt), each
    round's depth and node budget (at most tree.total_tokens) come from the policy.

    The rows share one cache but keep their own lengths: row b's valid keys are [0, L_b), and
    every forward writes its new keys at the shared offset W = max L_b, where the per-row mask
    finds them. After a round, row b's accepted positions are packed right after L_b, so a
    shorter row only leaves a masked gap. The rows draft in the same head forwards, are
    verified in one target forward, and accept, stop and leave the batch on their own.
    """
    tree, config, lookup = tree or TreeConfig(), config or GenerationConfig(), lookup or LookupConfig()
    if drafter is not None and drafter not in DRAFTERS:
        raise ValueError(f"drafter: {drafter!r} is not one of {', '.join(DRAFTERS)}")
    uses_head, copies = drafter in ("eagle3", "hybrid"), drafter in ("lookup", "hybrid")
    if uses_head:
        if head is None:
            raise ValueError(f"drafter: {drafter} needs an EAGLE-3 head; use drafter lookup without one")
        tree.validate(head.config.draft_vocab_size)
    lookup.validate()
    if adaptive is not None and len(prompts) != 1:
        raise ValueError(f"adaptive depth: decodes one prompt at a time, not {len(prompts)}")
    runs = [Run(target, prompt, config) for prompt in prompts]
    device = target.device
    longest = max(len(run.prompt_ids) + run.budget for run in runs)
    max_depth = max(tree.depth, adaptive.max_depth if adaptive else 0)
    nodes = max(tree.total_tokens if uses_head else 1, lookup.tokens + 1 if copies else 1)
    cache = target.new_cache(longest + nodes)
    # The draft cache also holds the tree's keys while drafting: top_k per level.
    draft_cache = KVCache(1, longest + tree.top_k * max_depth) if uses_head else None

    start = clock(device)
    input_ids, last_logits, out = prefill(target, [run.prompt_ids for run in runs], cache, capture=uses_head)
    verify_end = clock(device)
    rows, events = [], []  # a round's events are yielded once its bookkeeping is done
    for b, run in enumerate(runs):
        n = len(run.prompt_ids)
        root = run.pick(last_logits[b])
        row = Row(b, run, n, next_tokens=input_ids.new_tensor([root]))
        if uses_head:  # every prompt position is a pair for the head
            row.features, row.next_tokens = out.features[b, :n], torch.cat([input_ids[b, 1:n], row.next_tokens])
        if copies:
            row.context = ContextIndex(run.prompt_ids, lookup)
        rows.append(row)
        events.append((b, run.emit([(root, TokenState.BONUS, None)], None, [], 0.0, verify_end - start, verify_end)))
    cache.truncate(input_ids.shape[1])
    rows = drop_finished(rows, events, cache, draft_cache)
    yield from events

    while rows:
        start = clock(device)
        round_tree = adaptive.tree(tree) if adaptive else tree
        depth = max(0, min(round_tree.depth, max(row.run.remaining for row in rows) - 1)) if drafter else 0
        chains = [[] for _ in rows]
        if copies:
            for b, row in enumerate(rows):
                row.context.extend(row.run.output[len(row.context) - len(row.run.prompt_ids):])
                chains[b] = row.context.propose(min(lookup.tokens, row.run.remaining - 1))
        # While the target accepts whole copy chains, the head sits the round out (its drafting
        # would cost more than the nodes it adds); it catches up on the pairs next time it drafts.
        head_sits_out = uses_head and all(chain and row.hits.streak for chain, row in zip(chains, rows))
        if uses_head and depth > 0 and not head_sits_out:
            drafts = draft_trees(head, draft_cache, [row.draft_length for row in rows], [row.features for row in rows],
                                 [row.next_tokens for row in rows], round_tree, depth)
            for row in rows:
                row.draft_length += len(row.next_tokens)  # the pairs consumed
            budget = round_tree.total_tokens - 1
        else:  # with no room to draft, a plain step; the run ends with it
            drafts, budget = [DraftTree.root_only(row.next_tokens[-1:]) for row in rows], None
        if copies:
            drafts = [hybrid_tree(draft, chain, row.hits.rate, budget or len(chain)) if chain else draft
                      for draft, chain, row in zip(drafts, chains, rows)]
        draft_end = clock(device)

        written, lengths = cache.length, torch.tensor([row.length for row in rows], device=device)
        tokens, depths, ancestors = stack_trees(drafts)
        positions = lengths[:, None] + depths
        mask = target.rows_tree_mask(lengths, written, positions, ancestors)
        out = target.forward(tokens, positions, cache, mask, capture=uses_head)
        verify_end = clock(device)

        settled = [settle(row.run, draft, out.logits[b, : len(draft)], out.features[b, : len(draft)] if uses_head else None)
                   for b, (row, draft) in enumerate(zip(rows, drafts))]
        cache.keep_rows([row.length for row in rows], written, [s.kept for s in settled])
        events = []
        for row, draft, chain, done in zip(rows, drafts, chains, settled):
            row.length += done.kept.numel()
            if head_sits_out:  # the head has not consumed its pairs: they wait for its next draft
                row.features = torch.cat([row.features, done.next_features])
                row.next_tokens = torch.cat([row.next_tokens, done.next_tokens])
            else:
                row.features, row.next_tokens = done.next_features, done.next_tokens
            row_depth = int(draft.depths.max()) if copies else depth
            event = row.run.emit(done.candidates, draft if drafter else None, done.path, draft_end - start,
                                 verify_end - draft_end, verify_end, row_depth)
            if copies:
                copied = [source in COPIED for source in draft.sources or ()]
                row.hits.observe(sum(copied[node] for node in done.path) if copied else 0, sum(copied))
            if adaptive:
                adaptive.observe(row_depth, len(done.path), event.draft_s + event.verify_s + event.bookkeeping_s)
            events.append((row.index, event))
        rows = drop_finished(rows, events, cache, draft_cache)
        yield from events


def drop_finished(rows: list[Row], events: list[tuple[int, RoundEvent]], cache: KVCache,
                  draft_cache: KVCache | None) -> list[Row]:
    """The rows still running, their cache rows selected."""
    keep = [b for b, (_, event) in enumerate(events) if not event.finished]
    if len(keep) == len(rows) or not keep:
        return [rows[b] for b in keep]
    rows = [rows[b] for b in keep]
    selected = torch.tensor(keep, dtype=torch.long, device=rows[0].next_tokens.device)
    # The shared length shrinks to the longest live row: a finished row may have kept drafts
    # past its budget, which the cache's capacity does not allow for.
    for kv, lengths in ((cache, [row.length for row in rows]), (draft_cache, [row.draft_length for row in rows])):
        if kv is not None:
            kv.select_rows(selected)
            kv.truncate(max(lengths))
    return rows


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
    """Speculative decoding of one prompt, one event per round: decode_rows' one-row case."""
    for _, event in decode_rows(target, head, [prompt], drafter, tree, config, adaptive, lookup):
        yield event


def plain_decode(
    target: Target,
    prompt: str | Sequence[int],
    config: GenerationConfig | None = None,
) -> Iterator[RoundEvent]:
    """The baseline: one target forward per token, same loop, stopping rules and events."""
    for _, event in decode_rows(target, None, [prompt], None, config=config):
        yield event
