"""Run statistics, reduced from a RoundEvent stream one event at a time.

The one place where a run's tokens, rounds, tau, acceptance by position, time split and
tokens/s are computed: `collect` / `collect_rows` (the library and the CLIs), the benchmark
and the app's live view all fold their events into a RunStats.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from eagle3.acceptance import TokenState
from eagle3.events import RoundEvent


def tokens_per_round(accepted_drafts: int, rounds: int) -> float:
    """tau: mean tokens per round that verified drafts, the accepted drafts plus the target's own token."""
    return (accepted_drafts + rounds) / rounds if rounds else 0.0


def tokens_per_second(tokens: int, seconds: float) -> float:
    """0.0 before any time is measured."""
    return tokens / seconds if seconds > 0 else 0.0


def acceptance_by_position(accepted_per_round: Sequence[int], depth: int) -> list[float]:
    """Fraction of verification rounds that accepted at least i drafts, i = 1..depth."""
    rounds = max(1, len(accepted_per_round))
    return [round(sum(a >= i for a in accepted_per_round) / rounds, 4) for i in range(1, depth + 1)]


@dataclass
class RunStats:
    """What a run (or several, pooled) produced and where its compute time went."""

    output_ids: list[int] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)  # the output text, one piece per event
    accepted_per_round: list[int] = field(default_factory=list)  # accepted drafts of each verification round
    depths: list[int] = field(default_factory=list)  # draft depth of each verification round
    nodes: list[int] = field(default_factory=list)  # tree nodes each verification round verified, root included
    times: list[tuple[int, float]] = field(default_factory=list)  # (new tokens, compute seconds) after each event
    draft_s: float = 0.0
    verify_s: float = 0.0
    bookkeeping_s: float = 0.0
    elapsed_s: float = 0.0
    finished: bool = False
    stop_reason: str | None = None
    accepted_by_source: Counter = field(default_factory=Counter)  # accepted drafts: "head", "copy", "both"

    def add(self, event: RoundEvent) -> None:
        self.output_ids += event.output_ids
        self.pieces.append(event.text)
        if event.index > 0:  # a verification round (index 0 is the prefill)
            self.accepted_per_round.append(event.accepted_drafts)
            self.depths.append(event.depth)
            self.nodes.append(len(event.tree) if event.tree is not None else 1)
        self.draft_s += event.draft_s
        self.verify_s += event.verify_s
        self.bookkeeping_s += event.bookkeeping_s
        self.elapsed_s += event.seconds
        self.times.append((self.new_tokens, self.elapsed_s))
        self.finished, self.stop_reason = event.finished, event.stop_reason
        self.accepted_by_source.update(t.source for t in event.tokens if t.state is TokenState.ACCEPTED)

    def pool(self, other: RunStats) -> None:
        """Add another run's rounds, tokens and times (for totals over prompts)."""
        self.output_ids += other.output_ids
        self.pieces += other.pieces
        self.accepted_per_round += other.accepted_per_round
        self.depths += other.depths
        self.nodes += other.nodes
        self.draft_s += other.draft_s
        self.verify_s += other.verify_s
        self.bookkeeping_s += other.bookkeeping_s
        self.elapsed_s += other.elapsed_s
        self.accepted_by_source.update(other.accepted_by_source)

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def new_tokens(self) -> int:
        return len(self.output_ids)

    @property
    def rounds(self) -> int:
        """Target forwards after the prefill."""
        return len(self.accepted_per_round)

    @property
    def drafted(self) -> list[int]:
        """Accepted drafts of each round that verified drafts: not the plain steps, where the
        drafter proposed nothing (a resting head, eagle3.budget, or the run's last token)."""
        return [accepted for accepted, depth in zip(self.accepted_per_round, self.depths) if depth > 0]

    @property
    def plain_steps(self) -> int:
        return self.rounds - len(self.drafted)

    @property
    def tau(self) -> float:
        """Tokens per round that verified drafts (what the drafts are worth where they are made)."""
        drafted = self.drafted
        return tokens_per_round(sum(drafted), len(drafted))

    @property
    def nodes_per_round(self) -> float:
        """Mean tree nodes a verification round verified, root included."""
        return sum(self.nodes) / len(self.nodes) if self.nodes else 0.0

    @property
    def tokens_per_s(self) -> float:
        return tokens_per_second(self.new_tokens, self.elapsed_s)

    def acceptance(self, depth: int) -> list[float]:
        return acceptance_by_position(self.drafted, depth)


def rounds_text(stats: RunStats) -> str:
    """"rounds N", and how many of them were plain steps (the head resting, eagle3.budget)."""
    return f"rounds {stats.rounds}" + (f" ({stats.plain_steps} plain)" if stats.plain_steps else "")


def collect(events: Iterable[RoundEvent]) -> RunStats:
    """Run one prompt's event stream to its end and summarise it."""
    rows = collect_rows(events)
    if len(rows) != 1:
        raise ValueError(f"collect: the events are of {len(rows)} prompts; use collect_rows")
    return rows[0]


def collect_rows(events: Iterable[RoundEvent]) -> list[RunStats]:
    """Run a batch's event stream to its end: one RunStats per prompt, in the prompts' order."""
    stats: dict[int, RunStats] = {}
    for event in events:
        stats.setdefault(event.row, RunStats()).add(event)
    return [stats[row] for row in sorted(stats)]
