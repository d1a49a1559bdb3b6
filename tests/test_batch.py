"""Batch speculative decoding: lossless per row, ragged rows, rows finishing apart."""

import pytest
import torch

from eagle3 import GenerationConfig, HeadDrafter, SamplingConfig, TreeConfig, collect, collect_rows, decode, drafter_named
from eagle3.adaptive import AdaptiveDepth
from eagle3.batch import batch_drafter
from tests.models import make_head, make_target, sampling_pair
from tests.test_greedy import random_prompts, reference
from tests.test_sampling import PROMPT, VOCAB, chi_square_pvalue, exact_joint


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_greedy_batch_equals_each_prompt_alone(family):
    target = make_target(family, vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    prompts = random_prompts(7, target.vocab_size, seed=11)
    expected = [reference(target, p, 30) for p in prompts]
    for size in (1, 3, 7):
        for tree in (TreeConfig(4, 3, 12), TreeConfig(1, 1, 2)):
            results = collect_rows(decode(target, prompts[:size], HeadDrafter(head, tree), GenerationConfig(30)))
            assert [r.output_ids for r in results] == expected[:size]
    plain = collect_rows(decode(target, prompts, None, GenerationConfig(30)))
    assert [r.output_ids for r in plain] == expected
    drafter = HeadDrafter(head, TreeConfig(4, 3, 12))
    assert batch_drafter(drafter, 4, target.device, 4) is drafter and batch_drafter(drafter, 5, target.device, 4) is None
    assert batch_drafter(drafter, 7, target.device) is None  # 7 > 3 on the CPU
    assert batch_drafter(drafter, 7, target.device, None) is drafter


def test_batched_decoding_streams_each_row_s_events_round_by_round():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    prompts = random_prompts(3, target.vocab_size, seed=13)
    events = list(decode(target, prompts, HeadDrafter(head, TreeConfig(4, 3, 12)), GenerationConfig(20)))
    assert [event.index for event in events] == sorted(event.index for event in events)  # rounds interleave rows
    for row, prompt in enumerate(prompts):
        row_events = [event for event in events if event.row == row]
        assert [event.index for event in row_events] == list(range(len(row_events)))
        assert row_events[-1].finished and not any(event.finished for event in row_events[:-1])
        assert collect(row_events).output_ids == reference(target, prompt, 20)


def test_rows_finish_at_different_times():
    target = make_target("llama", vocab_size=32, logit_scale=4.0, max_position_embeddings=40)
    head = make_head(target, draft_vocab_size=24)
    prompts = random_prompts(4, target.vocab_size, seed=12)
    eos = reference(target, prompts[0], 12)[5]
    target.model.generation_config.eos_token_id = eos
    target.eos_token_ids = frozenset([eos])
    prompts[3] = (prompts[3] * 40)[:36]  # this row reaches the 40-token context first
    results = collect_rows(decode(target, prompts, HeadDrafter(head, TreeConfig(5, 3, 12)), GenerationConfig(20)))
    for prompt, result in zip(prompts, results):
        assert result.output_ids == reference(target, prompt, min(20, 40 - len(prompt)))
    assert {r.stop_reason for r in results} >= {"eos", "context"}


def test_sampled_batch_rows_follow_the_target():
    target, head = sampling_pair(VOCAB)
    sampling = SamplingConfig(temperature=1.0)
    other = [5, 2, 7, 7, 1]
    counts = [torch.zeros(VOCAB ** 3), torch.zeros(VOCAB ** 3)]
    for seed in range(1500):
        results = collect_rows(decode(target, [PROMPT, other], HeadDrafter(head, TreeConfig(2, 3, 8)),
                                      GenerationConfig(3, sampling, seed=seed)))
        for row, result in enumerate(results):
            a, b, c = result.output_ids
            counts[row][a * VOCAB * VOCAB + b * VOCAB + c] += 1
    assert chi_square_pvalue(counts[0], exact_joint(target, sampling)) > 1e-3
    assert chi_square_pvalue(counts[1], exact_joint(target, sampling, prompt=other)) > 1e-3


def test_a_finished_row_that_kept_drafts_past_its_budget_frees_the_cache(embedded):
    """The embedded head accepts long paths: the row that finishes first can keep drafts
    past its budget; the shared cache must shrink back to the live rows (it overflowed)."""
    from eagle3.prompts import read_prompts

    target, head = embedded
    prompts = [r.first for r in read_prompts("assets/prompts/code.jsonl")[:2]]
    tree, config = TreeConfig(5, 3, 16), GenerationConfig(128)
    results = collect_rows(decode(target, prompts, HeadDrafter(head, tree), config))
    for prompt, result in zip(prompts, results):
        assert result.output_ids == collect(decode(target, prompt, HeadDrafter(head, tree), config)).output_ids


def test_copying_batches_pad_trees_of_different_sizes_and_stay_exact():
    """Rows copy from their own contexts, so their trees differ in size within a round: the
    loop pads them to one verify forward, and every row still equals its plain decoding."""
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=24)
    prompts = random_prompts(3, target.vocab_size, seed=14)
    prompts[0] = prompts[0] * 4  # a repeating context: long copy chains in this row
    sizes: dict[tuple[str, int], set[int]] = {}
    for drafter in ("lookup", "hybrid"):
        events = list(decode(target, prompts, drafter_named(drafter, head, TreeConfig(3, 2, 6)), GenerationConfig(30)))
        for row, prompt in enumerate(prompts):
            assert collect([e for e in events if e.row == row]).output_ids == reference(target, prompt, 30)
        for event in events:
            if event.index > 0:
                sizes.setdefault((drafter, event.index), set()).add(len(event.tree.tokens) if event.tree else 1)
    assert any(len(s) > 1 for s in sizes.values())  # some round verified trees of different sizes together
    with pytest.raises(ValueError, match="adaptive depth: decodes one prompt at a time"):
        next(decode(target, prompts, HeadDrafter(head, policy=AdaptiveDepth())))


def test_a_ragged_prefill_keeps_logits_only_where_a_prompt_ends():
    from eagle3.decoding import prefill

    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    prompts = [list(range(1, 4)), list(range(1, 30)), list(range(2, 5)), list(range(1, 12))]
    _, last, out = prefill(target, prompts, target.new_cache(64))
    assert out.logits.shape == (4, 3, 32)  # three distinct ends, not the 27 positions after the shortest
    for row, prompt in enumerate(prompts):
        _, alone, _ = prefill(target, [prompt], target.new_cache(64))
        assert torch.allclose(last[row], alone[0], atol=1e-5)
