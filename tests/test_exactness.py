"""Naming where a greedy output leaves plain decoding's, and whether the target stood at a near-tie."""

import torch

from eagle3 import GenerationConfig, collect, decode
from eagle3.exactness import divergence
from eagle3.views import RunView, summary_html
from tests.models import make_target

PROMPT = [3, 1, 4, 1, 5]


def test_a_divergence_is_named_with_the_gap_between_the_two_logits():
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    plain = collect(decode(target, PROMPT, None, GenerationConfig(8))).output_ids
    assert divergence(target, PROMPT, plain, plain) is None
    with torch.no_grad():
        logits = target.model(torch.tensor([PROMPT + plain[:3]])).logits[0, -1].float()
    runner_up = int(logits.topk(2).indices[1])
    found = divergence(target, PROMPT, plain, plain[:3] + [runner_up] + plain[4:])
    assert (found.index, found.plain, found.other) == (3, plain[3], runner_up)
    assert abs(found.gap - float(logits[plain[3]] - logits[runner_up])) < 1e-4 and not found.near_tie
    assert "token 3: not a near-tie" in found.describe()
    # Two tokens whose lm_head rows are the same tie wherever they are: a near-tie.
    twin = next(t for t in range(target.vocab_size) if t != plain[3])
    with torch.no_grad():
        target.model.lm_head.weight[twin] = target.model.lm_head.weight[plain[3]]
    tie = divergence(target, PROMPT, plain, plain[:3] + [twin] + plain[4:])
    assert tie.gap == 0 and tie.near_tie and "a near-tie" in tie.describe()
    ended = divergence(target, PROMPT, plain, plain[:5])
    assert ended.gap is None and not ended.near_tie and "one ended there" in ended.describe()


def test_the_summary_says_where_outputs_differ():
    spec, plain = RunView("EAGLE-3"), RunView("plain")
    spec.stats.times, plain.stats.times, plain.stats.finished = [(1, 0.1)], [(1, 0.2)], True
    assert "lossless: identical to plain decoding" in summary_html([spec], [plain], [None])
    target = make_target("llama", vocab_size=32, logit_scale=4.0)
    found = divergence(target, PROMPT, [1, 2, 3], [1, 2, 4])
    assert "outputs differ from token 2: " in summary_html([spec], [plain], [found])
    assert "lossless" not in summary_html([spec], [plain], None)  # sampled, or not checked yet
