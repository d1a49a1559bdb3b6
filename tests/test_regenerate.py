"""Training-data replies by continuous batching: each prompt's reply is the one plain decoding
gives it alone, whatever the slot it ran in and whoever shared the batch."""

import pytest
import torch

from eagle3.acceptance import SamplingConfig
from eagle3.decoding import GenerationConfig, decode
from eagle3.regenerate import generate_replies
from eagle3.stats import collect
from tests.models import make_target

EOS = 41  # a token this random target emits early after some prompts and never after others


@pytest.fixture(scope="module")
def target():
    # Sharp logits make some replies end early (EOS) and others run to the limit, so slots free
    # up at different steps and take new prompts mid-batch.
    return make_target("llama", vocab_size=48, eos=EOS, logit_scale=6.0, seed=3)


def prompts(count: int, seed: int = 0) -> list[list[int]]:
    rng = torch.Generator().manual_seed(seed)
    return [torch.randint(4, 48, (int(torch.randint(1, 12, (1,), generator=rng)),), generator=rng).tolist()
            for _ in range(count)]


def test_greedy_replies_equal_each_prompt_decoded_alone(target):
    asked = prompts(13)
    replies = generate_replies(target, asked, 10, SamplingConfig(), slots=4, seed=0)
    alone = []
    for prompt in asked:
        output = collect(list(decode(target, prompt, None, GenerationConfig(max_new_tokens=10)))).output_ids
        alone.append([t for t in output if t != EOS])
    assert replies == alone
    lengths = {len(r) for r in replies}
    assert len(lengths) > 2 and 10 in lengths  # early ends and full-length replies: refills happened


def test_sampled_replies_are_seeded_and_stop_at_eos(target):
    asked = prompts(9, seed=1)
    sampling = SamplingConfig(temperature=1.0, top_p=0.9)
    first = generate_replies(target, asked, 8, sampling, slots=3, seed=5)
    assert first == generate_replies(target, asked, 8, sampling, slots=3, seed=5)
    assert first != generate_replies(target, asked, 8, sampling, slots=3, seed=6)
    assert all(EOS not in reply and len(reply) <= 8 for reply in first)


def test_follow_up_prompts_join_the_queue_and_the_cache_grows(target):
    asked = prompts(6, seed=2)
    everything = list(asked)

    def follow_up(i, reply):
        # the first prompts' next turn: longer than any first prompt plus a reply
        if i >= len(asked):
            return None
        further = everything[i] + reply + [5, 6] * 8
        everything.append(further)
        return further

    replies = generate_replies(target, asked, 10, SamplingConfig(), slots=4, seed=0, follow_up=follow_up)
    assert len(replies) == len(everything) == 12
    for prompt, reply in zip(everything, replies):
        output = collect(list(decode(target, prompt, None, GenerationConfig(max_new_tokens=10)))).output_ids
        assert reply == [t for t in output if t != EOS]
