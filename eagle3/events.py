"""The per-round event stream that the app, the benchmark and the CLI all consume."""

from __future__ import annotations

from dataclasses import dataclass, field

from eagle3.acceptance import TokenState


@dataclass(frozen=True)
class Token:
    id: int
    text: str  # what the token adds to the output ('' while a character is incomplete)
    state: TokenState
    source: str | None = None  # who drafted it: "head", "copy" (context lookup) or "both"; None: the target


@dataclass
class TreeView:
    """A round's draft tree as plain data; node 0 is the root (already generated)."""

    tokens: list[int]
    parents: list[int]  # -1 for the root
    depths: list[int]
    scores: list[float]  # cumulative draft log probability
    sources: list[str] | None = None  # per node: "root", "head", "copy" or "both"; None: all the head's


@dataclass
class RoundEvent:
    """One round of decoding: index 0 is the prefill, then one per target forward."""

    index: int
    tokens: list[Token]  # in reading order; REJECTED tokens are not part of the output
    tree: TreeView | None  # None for the prefill and for plain decoding
    accepted_path: list[int]  # accepted tree nodes, root excluded
    draft_s: float
    verify_s: float  # the target forward (prefill, tree verification or plain step)
    bookkeeping_s: float  # acceptance, cache compaction, detokenization
    new_tokens: int  # output tokens so far
    rounds: int  # verification rounds so far (the prefill excluded)
    tau: float  # running mean of accepted drafts + 1 per verification round
    elapsed_s: float  # compute time so far, all rounds
    depth: int = 0  # draft depth used this round (0: no drafting)
    finished: bool = False
    stop_reason: str | None = None  # "eos", "max_new_tokens" or "context"
    # The run's output ids so far: one list, shared by all of a run's events and growing.
    output_ids: list[int] = field(default_factory=list, repr=False)

    @property
    def text(self) -> str:
        """The output text this round adds."""
        return "".join(t.text for t in self.tokens if t.state is not TokenState.REJECTED)

    @property
    def accepted_drafts(self) -> int:
        return len(self.accepted_path)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.elapsed_s if self.elapsed_s > 0 else 0.0
