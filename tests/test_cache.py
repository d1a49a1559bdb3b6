"""After acceptance the caches hold exactly the accepted positions."""

import torch

from eagle3.acceptance import accept_greedy
from eagle3.kv_cache import KVCache
from eagle3.tree import TreeConfig, draft_tree, stack_trees
from tests.models import make_head, make_target


def test_keep_packs_positions_after_prefix():
    cache = KVCache(num_layers=2, capacity=16)
    states = torch.arange(10.0).view(1, 1, 10, 1).expand(1, 2, 10, 3)
    for layer in range(2):
        cache.update(states, states + 100, layer)
    cache.keep(4, [0, 2, 5])
    assert cache.length == 7 and cache.get_seq_length() == 7
    for layer in cache.layers:
        assert layer.keys[0, 0, :, 0].tolist() == [0, 1, 2, 3, 4, 6, 9]
        assert layer.values[0, 1, :, 2].tolist() == [100, 101, 102, 103, 104, 106, 109]
    cache.truncate(5)
    assert cache.length == 5


def test_every_layer_lives_in_one_buffer_that_one_gather_compacts():
    """keep_rows moves all layers' kept positions at once: the layers are views of one buffer,
    also after rows are dropped."""
    cache = KVCache(num_layers=3, capacity=12)
    states = torch.arange(2 * 8.0).view(2, 1, 8, 1).expand(2, 2, 8, 4)
    for layer in range(3):
        cache.update(states + 100 * layer, -states, layer)
    cache.keep_rows([3, 5], 5, [[0, 2], [0, 1, 2]])  # row 0 packs after its 3 valid keys; row 1 stays
    shared = cache.storage.untyped_storage().data_ptr()
    for number, layer in enumerate(cache.layers):
        assert layer._keys.untyped_storage().data_ptr() == shared
        assert layer.keys[0, 0, :, 0].tolist() == [100 * number + v for v in [0, 1, 2, 5, 7, 5, 6, 7]]
        assert layer.keys[1, 0, :, 0].tolist() == [100 * number + v for v in range(8, 16)]
    cache.select_rows(torch.tensor([1]))
    assert all(layer._values.untyped_storage().data_ptr() == cache.storage.untyped_storage().data_ptr()
               for layer in cache.layers)
    assert cache.layers[2].values[0, 1, :, 3].tolist() == [-v for v in range(8, 16)]


def test_compacted_cache_gives_fresh_prefill_logits():
    for family in ("llama", "qwen3"):
        target = make_target(family, vocab_size=32, logit_scale=4.0)
        head = make_head(target, draft_vocab_size=24)
        prompt = torch.tensor([5, 9, 2, 7, 1, 3])
        cache, draft_cache = target.new_cache(64), KVCache(1, 64)
        out = target.forward(prompt[None], torch.arange(6)[None], cache, capture=True)
        root = int(out.logits[0, -1].argmax())
        features, next_tokens, sequence = out.features[0], prompt.tolist()[1:] + [root], prompt.tolist() + [root]
        accepted_any = False
        for _ in range(6):
            tree = draft_tree(head, draft_cache, features, next_tokens, TreeConfig(4, 4, 16))
            assert draft_cache.length == cache.length  # the draft keeps one entry per target position
            prefix = cache.length
            tokens, depths, ancestors = stack_trees([tree], target.device)
            positions = prefix + depths[0]
            out = target.forward(tokens, positions[None], cache, target.tree_mask(prefix, positions, ancestors[0]), capture=True)
            result = accept_greedy(tree, out.logits[0].argmax(-1).tolist())
            kept = [0] + result.path
            cache.keep(prefix, kept)
            accepted_any |= bool(result.path)
            features, next_tokens = out.features[0, kept], [tree.tokens[k] for k in result.path] + [result.next_token]
            sequence += next_tokens

            assert cache.length == len(sequence) - 1
            step = target.forward(torch.tensor([[sequence[-1]]]), torch.tensor([[cache.length]]), cache, capture=True)
            with torch.no_grad():
                fresh = target.model(torch.tensor([sequence]), output_hidden_states=True)
            assert torch.allclose(step.logits[0, -1], fresh.logits[0, -1].float(), atol=1e-4)
            fresh_features = torch.cat([fresh.hidden_states[i][0, -1] for i in target.aux_layer_ids])
            assert torch.allclose(step.features[0, -1], fresh_features, atol=1e-4)
            cache.truncate(cache.length - 1)  # undo the check's step
        assert accepted_any
