"""bfloat16 on a CPU (float32 where the C++ float32 product multiplies instead): a tree
verified in one forward gives each node, bit for bit, the logits of one-token steps along its
path, and rows verified together get the logits of each row alone (eagle3.invariant), so
greedy decoding stays exact, one prompt or a batch."""

import pytest
import torch

from eagle3 import GenerationConfig, TreeConfig, collect, collect_rows, decode, drafter_named
from eagle3.decoder_layer import lean_forward, native_forward, use_lean_layers
from eagle3.decoding import prefill
from eagle3.invariant import NAME, PrepackedLinear, RowInvariantLinear, SharedInput, onednn_packs, prepack_linears
from eagle3.native import layer_ops, own_products
from eagle3.target import Target, exact_bf16, set_arithmetic
from eagle3.tree import DraftTree, stack_trees
from tests.models import make_head, make_target

# bfloat16 linear layers give each row the same bits by construction where the C++ product
# multiplies them (AMX, AVX-512 BF16, or AVX2 and FMA), and within this CPU's row limits with
# oneDNN's (measured by eagle3.invariant.row_limits); float32 ones where the C++ product
# multiplies them. The tests run in the dtype `auto` picks here (float32 also where the C++
# product multiplies it: test_float32_too); where neither holds, nothing is claimed.
DTYPE = (torch.bfloat16 if exact_bf16(torch.device("cpu"))
         else torch.float32 if own_products(torch.float32) is not None else None)
pytestmark = pytest.mark.skipif(DTYPE is None, reason="needs a CPU with exact bfloat16 (AMX), or the C++ "
                                                      "build on one with AVX2 and FMA")


def exact_target(attention: str = "auto", seed: int = 0, family: str = "llama", dtype: torch.dtype | None = None,
                 **overrides) -> Target:
    model = make_target(family, vocab_size=64, seed=seed, logit_scale=4.0, **overrides).model.to(dtype or DTYPE)
    return Target(set_arithmetic(model, attention))


def exact_head(target: Target):
    """A random head on prepacked products, as eagle3.checkpoint.load_head gives: it drafts
    through the C++ layer where that is built (tests/test_draft_step.py)."""
    head = make_head(target, draft_vocab_size=48).to(DTYPE)
    prepack_linears(head)
    return head


def stock_linears(target: Target) -> Target:
    """The control: the target with oneDNN's own choice of kernel for every product (through
    transformers' own decoder layers, since the lean ones call the packed products)."""
    use_lean_layers(target.model, False)
    for module in target.model.modules():
        if type(module) is RowInvariantLinear:
            module.__class__ = torch.nn.Linear
    return target


def random_tree(size: int, vocab_size: int, generator: torch.Generator) -> DraftTree:
    parents = [-1] + [int(torch.randint(0, node, (), generator=generator)) for node in range(1, size)]
    depths = [0] * size
    for node in range(1, size):
        depths[node] = depths[parents[node]] + 1
    tokens = torch.randint(0, vocab_size, (size,), generator=generator).tolist()
    return DraftTree.from_parents(tokens, parents, [-float(d) for d in depths])


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
    tokens, depths, ancestors = stack_trees([tree], target.device)
    positions = n + depths[0]
    together = target.forward(tokens, positions[None], cache,
                              attention_mask=target.tree_mask(n, positions, ancestors[0])).logits[0]
    for node in range(len(tree)):
        cache.truncate(n)
        for step, along in enumerate(path_to(tree, node)):
            logits = target.forward(torch.tensor([[tree.tokens[along]]]), torch.tensor([[n + step]]), cache).logits[0, -1]
        if not torch.equal(logits, together[node]):
            return False
    return True


def batch_matches_rows_alone(target: Target, seed: int, rows: int = 4) -> bool:
    """Whether prefilling random prompts of different lengths together (right-padded) and
    verifying a random 17-node tree per row in one forward gives each row, bit for bit, the
    logits of its prompt prefilled and its tree verified alone."""
    generator = torch.Generator().manual_seed(seed)
    lengths = [int(torch.randint(5, 60, (), generator=generator)) for _ in range(rows)]
    prompts = [torch.randint(0, target.vocab_size, (n,), generator=generator).tolist() for n in lengths]
    trees = [random_tree(17, target.vocab_size, generator) for _ in range(rows)]
    alone = []
    for prompt, tree in zip(prompts, trees):
        cache, n = target.new_cache(256), len(prompt)
        prefill(target, [prompt], cache)
        tokens, depths, ancestors = stack_trees([tree], target.device)
        positions = n + depths[0]
        alone.append(target.forward(tokens, positions[None], cache,
                                    attention_mask=target.tree_mask(n, positions, ancestors[0])).logits[0])
    cache = target.new_cache(256)
    width = prefill(target, prompts, cache)[0].shape[1]
    tokens, depths, ancestors = stack_trees(trees, target.device)
    lengths = torch.tensor(lengths)
    positions = lengths[:, None] + depths
    together = target.forward(tokens, positions, cache, target.rows_tree_mask(lengths, width, positions, ancestors)).logits
    return all(torch.equal(together[row], alone[row]) for row in range(rows))


def test_cpu_targets_get_the_invariant_attention_and_linear_layers(monkeypatch):
    target = exact_target()
    assert target.model.config._attn_implementation == NAME
    assert isinstance(target.model.lm_head, RowInvariantLinear)
    assert all(isinstance(layer.mlp.down_proj, RowInvariantLinear) for layer in target.layers)
    monkeypatch.setenv("EAGLE3_PRODUCT", "onednn")
    own_products.cache_clear()
    try:  # without the C++ float32 product float32 keeps its own attention and prepacked products
        float32 = make_target("llama")
        assert float32.model.config._attn_implementation != NAME
        assert type(float32.model.lm_head) is PrepackedLinear
    finally:
        own_products.cache_clear()


def test_layers_that_read_one_input_are_one_product():
    """q/k/v and gate/up multiply once, stacked; each takes its own columns, in any order of
    the calls, with the bits of its own product, and nothing stays held afterwards."""
    target = exact_target(**WIDE)
    layer = target.layers[0]
    group = layer.self_attn.q_proj.shared_input
    assert isinstance(group, SharedInput) and group is layer.self_attn.v_proj.shared_input
    assert layer.mlp.gate_proj.shared_input is layer.mlp.up_proj.shared_input is not None
    assert layer.self_attn.o_proj.shared_input is None and layer.mlp.down_proj.shared_input is None
    x = torch.randn(40, WIDE["hidden_size"], dtype=DTYPE)  # more than GEMM_ROWS rows

    def alone(rows, m):  # each row's one-row product on the member's own packed weight
        return torch.cat([m.packed_weights().product()(row) for row in rows.split(1)])

    with torch.no_grad():
        for order in (group.members, group.members[::-1]):
            shared = {id(m): m(x) for m in order}
            assert group._input is None
            for m in group.members:
                assert torch.equal(shared[id(m)], alone(x, m))
        # A member called again (or alone) computes afresh rather than reusing a stale product.
        q, k = group.members[:2]
        q(x)  # k and v now wait for x
        assert torch.equal(q(x + 1), alone(x + 1, q))  # q again, on another input
        assert torch.equal(k(x), alone(x, k))  # x is no longer held


LEAN_FAMILIES = {"llama": {}, "qwen2": {}, "qwen3": {}, "mistral": {"sliding_window": 6}}


@pytest.mark.parametrize("native", [
    pytest.param(True, id="C++", marks=pytest.mark.skipif(layer_ops() is None, reason="eagle3.native needs a C++ "
                                                                                    "compiler and ninja")),
    pytest.param(False, id="Python")])
@pytest.mark.parametrize("family", LEAN_FAMILIES)
def test_lean_layers_compute_the_stock_layers_bits(family, native):
    """eagle3.decoder_layer's forwards, the C++ one and the Python one, give bit for bit what
    transformers' own decoder layer gives under the same arithmetic: a prefill, a verified
    tree (its mask a keep mask for the C++ layers, additive for the others), one-token steps,
    and training's forward without a cache (its features and final states)."""
    target = exact_target(family=family, **LEAN_FAMILIES[family])
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():  # norm weights other than ones, so that their products round
        for name, weight in target.model.named_parameters():
            if "norm" in name:
                weight.copy_(torch.rand(weight.shape, generator=generator) + 0.5)
    use_lean_layers(target.model, native=native)
    forward = native_forward if native else lean_forward
    assert all(layer.__dict__["forward"].__func__ is forward for layer in target.layers)
    prefix = torch.randint(0, target.vocab_size, (1, 40), generator=generator)
    tree = random_tree(17, target.vocab_size, generator)
    tokens, depths, ancestors = stack_trees([tree], target.device)

    def run() -> list[torch.Tensor]:
        cache = target.new_cache(128)
        out = [target.forward(prefix, torch.arange(40)[None], cache, capture=True).logits]
        positions = 40 + depths[0]
        out.append(target.forward(tokens, positions[None], cache, attention_mask=target.tree_mask(40, positions, ancestors[0]),
                                  capture=True).features)
        cache.truncate(40)
        out += [target.forward(torch.tensor([[token]]), torch.tensor([[40 + i]]), cache).logits for i, token in enumerate(tree.tokens[:3])]
        return out + list(target.training_states(prefix))

    # The C++ attention reads a keep mask as it is; the others get the additive mask.
    assert target.mask_dtype == (torch.bool if native else DTYPE)
    lean = run()
    use_lean_layers(target.model, False)
    assert not any("forward" in layer.__dict__ for layer in target.layers)
    assert all(torch.equal(a, b) for a, b in zip(lean, run(), strict=True))


def test_layers_that_differ_are_not_grouped():
    module = torch.nn.Module()
    module.q_proj, module.k_proj = torch.nn.Linear(8, 8, bias=False), torch.nn.Linear(8, 4, bias=False)
    module.v_proj = torch.nn.Linear(8, 4, bias=True)  # a bias the others lack
    module.gate_proj, module.up_proj = torch.nn.Linear(8, 16), torch.nn.Linear(8, 16)
    prepack_linears(module)
    assert all(isinstance(m, PrepackedLinear) for m in module.children())
    assert module.q_proj.shared_input is None and module.gate_proj.shared_input is module.up_proj.shared_input


# Each arithmetic a CPU may run: the C++ attention and product (eagle3/csrc), the C++ attention
# with oneDNN's products within their row limits, and where the C++ cannot be built, float64
# attention with oneDNN's products. float32 is exact with the C++ ones only.
ARITHMETIC = {"C++": ("C++", "cpp"), "C++ attention, oneDNN products": ("C++", "onednn"),
              "no C++ build": ("float64", "onednn")}


@pytest.fixture(params=list(ARITHMETIC))
def arithmetic(request, monkeypatch):
    """(attention, products) of ARITHMETIC, set for the test."""
    attention, products = ARITHMETIC[request.param]
    if DTYPE == torch.float32 and request.param != "C++":
        pytest.skip("float32 keeps every row's bits with the C++ product only")
    if attention == "C++" and layer_ops() is None:
        pytest.skip("eagle3.native needs a C++ compiler and ninja")
    if attention == "float64":
        monkeypatch.setenv("EAGLE3_NATIVE", "0")
    monkeypatch.setenv("EAGLE3_PRODUCT", products)
    layer_ops.cache_clear()
    own_products.cache_clear()
    yield attention, products
    layer_ops.cache_clear()
    own_products.cache_clear()


def test_the_cache_stores_what_the_attention_reads(arithmetic):
    target = exact_target()
    cache = target.new_cache(8)
    target.forward(torch.tensor([[1, 2]]), torch.arange(2)[None], cache)
    assert cache.storage.dtype == {"C++": torch.float32, "float64": torch.float64}[arithmetic[0]]


@pytest.mark.parametrize("widths", ["small", "SmolLM2's"])
def test_tree_verification_is_bitwise_one_token_steps(widths, arithmetic):
    """At SmolLM2's widths too: its down projection's one-row products are the ones that
    AVX-512 BF16 pads."""
    target = exact_target(**(WIDE if widths == "SmolLM2's" else {}))
    assert all(tree_matches_steps(target, seed) for seed in range(8))


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_stock_attention_is_not(attention, monkeypatch):
    """The control: transformers' own attentions differ in the last bits, which in bfloat16
    is what flips greedy choices (at SmolLM2's widths: eager's products on AVX-512 BF16 keep
    the bits of a small model's). With oneDNN's products: on the C++ ones eager attention
    happens to keep these trees' bits, sdpa still does not. float32 keeps the C++ products,
    so that only the attention differs."""
    monkeypatch.setenv("EAGLE3_PRODUCT", "onednn" if DTYPE == torch.bfloat16 else "cpp")
    own_products.cache_clear()
    try:
        target = exact_target(attention, **WIDE)
        assert not all(tree_matches_steps(target, seed) for seed in range(8))
    finally:
        own_products.cache_clear()


def test_greedy_speculative_equals_plain(arithmetic):
    target = exact_target()
    head = exact_head(target)
    generator = torch.Generator().manual_seed(3)
    config = GenerationConfig(max_new_tokens=48)
    for _ in range(6):
        prompt = torch.randint(0, target.vocab_size, (int(torch.randint(4, 40, (), generator=generator)),),
                               generator=generator).tolist()
        plain = collect(decode(target, prompt, None, config)).output_ids
        for drafter in ("eagle3", "hybrid"):
            spec = collect(decode(target, prompt, drafter_named(drafter, head, TreeConfig(4, 4, 16)), config))
            assert spec.output_ids == plain


# Widths where oneDNN's kernel for more than 32 rows rounds differently (those of SmolLM2).
WIDE = dict(hidden_size=576, intermediate_size=1536, num_attention_heads=9, num_key_value_heads=3)


def test_a_batch_gives_each_row_its_logits_alone(arithmetic):
    target = exact_target(**WIDE)
    assert all(batch_matches_rows_alone(target, seed) for seed in range(4))


@pytest.mark.skipif(DTYPE == torch.float32 or own_products(torch.float32) is None,
                    reason="float32 is what `auto` runs here (the tests above), or no C++ product multiplies it")
def test_float32_too():
    """Where `auto` runs bfloat16, a float32 target (--dtype float32) is exact as well."""
    target = exact_target(dtype=torch.float32, **WIDE)
    assert all(tree_matches_steps(target, seed) for seed in range(4))
    assert all(batch_matches_rows_alone(target, seed) for seed in range(2))


@pytest.mark.skipif(DTYPE == torch.bfloat16 and not onednn_packs(torch.bfloat16),
                    reason="without oneDNN's bfloat16 (an AVX2 CPU) ATen's stock bfloat16 product keeps every "
                           "row's bits at these widths (a 16-row product costs about 16 one-row ones): no control")
def test_stock_linear_layers_do_not():
    """The control: with oneDNN's own kernel choice, some rows round differently from the same
    rows alone: on AMX those of 4 trees of 17 nodes (68 rows) or of a padded prefill, on
    AVX-512 BF16 a one-token step's against its node in a tree (the down projection's one-row
    product takes its own path)."""
    target = stock_linears(exact_target(**WIDE))
    assert not (all(batch_matches_rows_alone(target, seed) for seed in range(4))
                and all(tree_matches_steps(target, seed) for seed in range(8)))


def test_greedy_batches_equal_each_prompt_alone(arithmetic):
    target = exact_target(**WIDE)
    head = exact_head(target)
    generator = torch.Generator().manual_seed(5)
    prompts = [torch.randint(0, target.vocab_size, (int(torch.randint(4, 40, (), generator=generator)),),
                             generator=generator).tolist() for _ in range(4)]
    config = GenerationConfig(max_new_tokens=32)
    alone = [collect(decode(target, prompt, None, config)).output_ids for prompt in prompts]
    for drafter in ("plain", "eagle3", "hybrid"):
        together = collect_rows(decode(target, prompts, drafter_named(drafter, head, TreeConfig(4, 4, 16)), config))
        assert [stats.output_ids for stats in together] == alone, drafter
