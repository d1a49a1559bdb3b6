"""The one reducer of a RoundEvent stream: figures checked by hand, and against the events."""

import pytest

from eagle3 import collect, collect_rows
from eagle3.acceptance import TokenState
from eagle3.events import RoundEvent, Token
from eagle3.stats import RunStats, acceptance_by_position


def event(index, accepted, verify_s, depth=3, finished=False, row=0):
    tokens = [Token(7, "ab", TokenState.ACCEPTED)] * accepted + [Token(9, "x", TokenState.REJECTED),
                                                                  Token(8, "c", TokenState.BONUS)]
    return RoundEvent(index=index, row=row, tokens=tokens, tree=None, accepted_path=list(range(1, accepted + 1)),
                      draft_s=0.01, verify_s=verify_s, bookkeeping_s=0.001, depth=depth, finished=finished,
                      stop_reason="eos" if finished else None)


def test_run_statistics_by_hand():
    stats = collect([event(0, 0, 0.189, depth=0), event(1, 2, 0.289), event(2, 0, 0.089),
                     event(3, 3, 0.389, finished=True)])
    assert stats.rounds == 3 and stats.accepted_per_round == [2, 0, 3] and stats.depths == [3, 3, 3]
    assert stats.tau == (2 + 0 + 3 + 3) / 3
    assert stats.acceptance(4) == [round(2 / 3, 4), round(2 / 3, 4), round(1 / 3, 4), 0.0]
    assert stats.text == "c" + "ababc" + "c" + "abababc"  # rejected drafts are not output
    assert stats.output_ids == [8] + [7, 7, 8] + [8] + [7, 7, 7, 8]
    assert [n for n, _ in stats.times] == [1, 4, 5, 9] and round(stats.elapsed_s, 6) == 1.0
    assert round(stats.tokens_per_s, 6) == 9.0
    assert (round(stats.draft_s, 6), round(stats.verify_s, 6), round(stats.bookkeeping_s, 6)) == (0.04, 0.956, 0.004)
    assert stats.finished and stats.stop_reason == "eos"
    assert acceptance_by_position([], 2) == [0.0, 0.0]
    assert RunStats().tokens_per_s == 0.0

    pooled = RunStats()
    pooled.pool(stats)
    pooled.pool(collect([event(0, 0, 0.089, depth=0), event(1, 1, 0.189, finished=True)]))
    assert pooled.accepted_per_round == [2, 0, 3, 1] and pooled.new_tokens == 12 and round(pooled.elapsed_s, 6) == 1.3


def test_plain_steps_leave_tau_and_acceptance_to_the_rounds_that_drafted():
    """A resting head's rounds (eagle3.budget) verify the root alone: tau is what drafts are worth where they are made."""
    from eagle3.stats import rounds_text

    stats = collect([event(0, 0, 0.1, depth=0), event(1, 2, 0.1), event(2, 0, 0.1, depth=0), event(3, 0, 0.1, depth=0),
                     event(4, 1, 0.1, finished=True)])
    assert stats.rounds == 4 and stats.plain_steps == 2 and stats.drafted == [2, 1]
    assert stats.tau == (2 + 1 + 2) / 2 and stats.acceptance(3) == [1.0, 0.5, 0.0]
    assert rounds_text(stats) == "rounds 4 (2 plain)" and rounds_text(collect([event(0, 0, 0.1)])) == "rounds 0"


def test_a_batch_s_events_are_reduced_per_row():
    rows = collect_rows([event(0, 0, 0.1, row=1), event(0, 0, 0.1, row=0), event(1, 2, 0.1, row=1, finished=True),
                         event(1, 1, 0.1, row=0, finished=True)])
    assert [r.accepted_per_round for r in rows] == [[1], [2]]
    with pytest.raises(ValueError, match="use collect_rows"):
        collect([event(0, 0, 0.1, row=0), event(0, 0, 0.1, row=1)])
