"""The one reducer of a RoundEvent stream: figures checked by hand, and against the events."""

from eagle3 import GenerationConfig, TreeConfig, collect, speculative_decode
from eagle3.acceptance import TokenState
from eagle3.events import RoundEvent, Token
from eagle3.stats import RunStats, acceptance_by_position
from tests.models import make_head, make_target
from tests.test_greedy import random_prompts


def event(index, accepted, new_tokens, elapsed, depth=3, finished=False):
    tokens = [Token(7, "ab", TokenState.ACCEPTED)] * accepted + [Token(9, "x", TokenState.REJECTED),
                                                                  Token(8, "c", TokenState.BONUS)]
    return RoundEvent(index=index, tokens=tokens, tree=None, accepted_path=list(range(1, accepted + 1)), draft_s=0.01,
                      verify_s=0.1, bookkeeping_s=0.001, new_tokens=new_tokens, rounds=index, tau=0.0,
                      elapsed_s=elapsed, depth=depth, finished=finished, stop_reason="eos" if finished else None,
                      output_ids=list(range(new_tokens)))


def test_run_statistics_by_hand():
    stats = collect([event(0, 0, 1, 0.2, depth=0), event(1, 2, 4, 0.5), event(2, 0, 5, 0.6),
                     event(3, 3, 9, 1.0, finished=True)])
    assert stats.rounds == 3 and stats.accepted_per_round == [2, 0, 3] and stats.depths == [3, 3, 3]
    assert stats.tau == (2 + 0 + 3 + 3) / 3
    assert stats.acceptance(4) == [round(2 / 3, 4), round(2 / 3, 4), round(1 / 3, 4), 0.0]
    assert stats.text == "c" + "ababc" + "c" + "abababc"  # rejected drafts are not output
    assert stats.new_tokens == 9 and stats.tokens_per_s == 9.0 and stats.times[-1] == (9, 1.0)
    assert (round(stats.draft_s, 6), round(stats.verify_s, 6), round(stats.bookkeeping_s, 6)) == (0.04, 0.4, 0.004)
    assert stats.finished and stats.stop_reason == "eos"
    assert acceptance_by_position([], 2) == [0.0, 0.0]

    pooled = RunStats()
    pooled.pool(stats)
    pooled.pool(collect([event(0, 0, 1, 0.1, depth=0), event(1, 1, 3, 0.3, finished=True)]))
    assert pooled.accepted_per_round == [2, 0, 3, 1] and pooled.new_tokens == 12 and round(pooled.elapsed_s, 6) == 1.3


def test_the_reducer_agrees_with_the_decoder_s_own_running_figures():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    events = list(speculative_decode(target, head, random_prompts(1, 32, seed=3)[0], TreeConfig(4, 3, 12),
                                     GenerationConfig(40)))
    stats = collect(events)
    last = events[-1]
    assert stats.output_ids == last.output_ids and stats.rounds == last.rounds and stats.tau == last.tau
    assert stats.elapsed_s == last.elapsed_s and stats.stop_reason == last.stop_reason
