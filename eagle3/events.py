"""The per-round event stream that the app, the benchmark and the CLI all consume."""

from __future__ import annotations

from dataclasses import dataclass

from eagle3.acceptance import TokenState
from eagle3.tree import DraftTree


@dataclass(frozen=True)
class Token:
    id: int
    text: str  # what the token adds to the output ('' while a character is incomplete)
    state: TokenState
    source: str | None = None  # who drafted it: "head", "copy" (context lookup) or "both"; None: the target


@dataclass
class RoundEvent:
    """What one round of one row did: index 0 is the prefill, then one per target forward.
    Running figures (tokens so far, tau, tokens/s) are a RunStats' (eagle3.stats)."""

    index: int
    row: int  # the prompt's place in the decoded list (0 for a single prompt)
    tokens: list[Token]  # in reading order; REJECTED tokens are not part of the output
    tree: DraftTree | None  # the verified draft tree; None when nothing was drafted (prefill, plain decoding)
    accepted_path: list[int]  # accepted tree nodes, root excluded
    draft_s: float
    verify_s: float  # the target forward (prefill, tree verification or plain step)
    bookkeeping_s: float  # acceptance, cache compaction, detokenization
    depth: int = 0  # the verified tree's depth (0: nothing drafted)
    finished: bool = False
    stop_reason: str | None = None  # "eos", "max_new_tokens" or "context"

    @property
    def output_ids(self) -> list[int]:
        """The token ids this round adds to the output."""
        return [t.id for t in self.tokens if t.state is not TokenState.REJECTED]

    @property
    def text(self) -> str:
        """The output text this round adds."""
        return "".join(t.text for t in self.tokens if t.state is not TokenState.REJECTED)

    @property
    def accepted_drafts(self) -> int:
        return len(self.accepted_path)

    @property
    def seconds(self) -> float:
        """The round's compute time."""
        return self.draft_s + self.verify_s + self.bookkeeping_s
