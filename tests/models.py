"""Small random-weight targets, heads and a tokenizer, built inside the tests (offline)."""

from __future__ import annotations

import torch
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, PreTrainedTokenizerFast, Qwen2Config,
                          Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)

from eagle3.head import Eagle3Config, Eagle3Head
from eagle3.target import Target, set_arithmetic

COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=256, bos_token_id=None, pad_token_id=None)


def make_target(family: str = "llama", vocab_size: int = 32, seed: int = 0, eos: int | None = None,
                logit_scale: float = 1.0, **overrides) -> Target:
    """A random-weight target; logit_scale sharpens (>1) its next-token distributions."""
    torch.manual_seed(seed)
    kwargs = {**COMMON, "vocab_size": vocab_size, "eos_token_id": eos, **overrides}
    if family == "llama":
        model = LlamaForCausalLM(LlamaConfig(**kwargs))
    elif family == "qwen2":  # biases on q, k and v
        model = Qwen2ForCausalLM(Qwen2Config(**kwargs))
    elif family == "qwen3":
        model = Qwen3ForCausalLM(Qwen3Config(head_dim=16, **kwargs))
    elif family == "mistral":
        model = MistralForCausalLM(MistralConfig(**kwargs))
    else:
        raise ValueError(family)
    with torch.no_grad():
        model.lm_head.weight.mul_(logit_scale)
    model.generation_config.eos_token_id = eos
    return Target(set_arithmetic(model.eval()))


def make_head(target: Target, draft_vocab_size: int | None = None, seed: int = 1, **overrides) -> Eagle3Head:
    """A random head for target; the draft vocabulary is a random subset of the target's."""
    torch.manual_seed(seed)
    vocab = target.vocab_size
    draft_vocab_size = draft_vocab_size or vocab
    config = Eagle3Config(**{
        "hidden_size": target.hidden_size, "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": vocab, "draft_vocab_size": draft_vocab_size, "target_hidden_size": target.hidden_size, **overrides})
    head = Eagle3Head(config, target.input_embeddings)
    with torch.no_grad():
        for p in head.parameters():
            p.normal_(0, 0.2)
        for norm in (head.norm, head.midlayer.hidden_norm, head.midlayer.input_layernorm, head.midlayer.post_attention_layernorm):
            norm.weight.fill_(1.0)
    chosen = torch.randperm(vocab)[:draft_vocab_size].sort().values
    head.d2t.copy_(chosen - torch.arange(draft_vocab_size))
    head.t2d.zero_()
    head.t2d[chosen] = True
    return head.eval()


def random_pairs(target: Target, count: int, seed: int) -> tuple[torch.Tensor, list[int]]:
    """count (fused feature, next token) pairs for a head on `target`: features [count, 3H]
    and token ids, random."""
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(count, 3 * target.hidden_size, generator=generator)
    return features, torch.randint(0, target.vocab_size, (count,), generator=generator).tolist()


def sampling_pair(vocab_size: int) -> tuple[Target, Eagle3Head]:
    """The sharp, small-vocabulary target and head of the statistical tests, which decode
    thousands of times: three layers, the fewest with three distinct feature layers, since
    a step's cost is mostly per layer and the distributions need no depth."""
    target = make_target("llama", vocab_size=vocab_size, logit_scale=6.0, seed=5, num_hidden_layers=3)
    return target, make_head(target, draft_vocab_size=6, seed=6)


def make_tokenizer(vocab_size: int = 300) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on a few lines (multi-byte characters stay split)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<eos>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    text = ["def add(a, b):\n    return a + b\n", "for i in range(10):\n    print(i)\n", "class Point:\n    pass\n"] * 20
    tokenizer.train_from_iterator(text, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>")
