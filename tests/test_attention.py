"""bfloat16 on a CPU: a tree verified in one forward gives each node, bit for bit, the logits
of one-token steps along its path (eagle3.attention), so greedy decoding stays exact."""

import pytest
import torch

from eagle3 import GenerationConfig, TreeConfig, collect, plain_decode, speculative_decode
from eagle3.attention import NAME
from eagle3.target import Target, exact_bf16
from eagle3.tree import DraftTree
from tests.models import make_head, make_target

# bfloat16 linear layers give each row the same bits on AMX (measured); elsewhere `auto` keeps
# float32 and these properties are not claimed.
pytestmark = pytest.mark.skipif(not exact_bf16(torch.device("cpu")), reason="needs a CPU with AMX")


def bf16_target(attention: str = "auto", seed: int = 0) -> Target:
    model = make_target("llama", vocab_size=64, seed=seed, logit_scale=4.0).model.to(torch.bfloat16)
    return Target(model, attention=attention)


def random_tree(size: int, vocab_size: int, generator: torch.Generator) -> DraftTree:
    parents = [-1] + [int(torch.randint(0, node, (), generator=generator)) for node in range(1, size)]
    depths = [0] * size
    for node in range(1, size):
        depths[node] = depths[parents[node]] + 1
    tokens = torch.randint(0, vocab_size, (size,), generator=generator)
    return DraftTree.build(tokens, torch.tensor(depths), parents, [-float(d) for d in depths])


def path_to(tree: DraftTree, node: int) -> list[int]:
    path = []
    while node >= 0:
        path.append(node)
        node = tree.parents[node]
    return path[::-1]


def tree_matches_steps(target: Target, seed: int) -> bool:
    """Whether verifying a random 17-node tree after a random prefix gives every node the
    logits of feeding its path one token at a time."""
    generator = torch.Generator().manual_seed(seed)
    length = int(torch.randint(5, 120, (), generator=generator))
    prefix = torch.randint(0, target.vocab_size, (1, length), generator=generator)
    tree = random_tree(17, target.vocab_size, generator)
    cache = target.new_cache(256)
    n = prefix.shape[1]
    target.forward(prefix, torch.arange(n)[None], cache)
    positions = n + tree.depths
    together = target.forward(tree.tokens[None], positions[None], cache,
                              attention_mask=target.tree_mask(n, positions, tree.ancestors)).logits[0]
    for node in range(len(tree)):
        cache.truncate(n)
        for step, along in enumerate(path_to(tree, node)):
            logits = target.forward(tree.tokens[along].view(1, 1), torch.tensor([[n + step]]), cache).logits[0, -1]
        if not torch.equal(logits, together[node]):
            return False
    return True


def test_bf16_cpu_targets_get_the_invariant_attention():
    assert bf16_target().model.config._attn_implementation == NAME
    assert make_target("llama").model.config._attn_implementation != NAME  # float32 keeps its own


def test_tree_verification_is_bitwise_one_token_steps():
    target = bf16_target()
    assert all(tree_matches_steps(target, seed) for seed in range(8))


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_stock_attention_is_not(attention):
    """The control: transformers' own attentions differ in the last bits, which in bfloat16
    is what flips greedy choices."""
    target = bf16_target(attention)
    assert not all(tree_matches_steps(target, seed) for seed in range(8))


def test_bf16_greedy_speculative_equals_plain():
    target = bf16_target()
    head = make_head(target, draft_vocab_size=48).to(torch.bfloat16)
    generator = torch.Generator().manual_seed(3)
    config = GenerationConfig(max_new_tokens=48)
    for _ in range(6):
        prompt = torch.randint(0, target.vocab_size, (int(torch.randint(4, 40, (), generator=generator)),),
                               generator=generator).tolist()
        plain = collect(plain_decode(target, prompt, config)).output_ids
        for drafter in ("eagle3", "hybrid"):
            spec = collect(speculative_decode(target, head, prompt, TreeConfig(4, 4, 16), config, drafter=drafter))
            assert spec.output_ids == plain
