"""eagle3/csrc/product.cpp: bfloat16 and float32 products whose every row gets the bits it
gets alone, for any number of rows, by construction; within rounding of the exact product;
bad shapes and dtypes named. (The decoders on top of it: tests/test_invariant.py.)"""

import pytest
import torch

from eagle3 import native
from eagle3.invariant import ANY_ROWS, PrepackedLinear, make_row_invariant, onednn_packs, prepack_linears
from eagle3.native import cpu_flags, layer_ops

# This CPU's instructions multiply both dtypes where it has AVX2 and FMA (bfloat16 by AMX's
# tiles where it has AMX, by vdpbf16ps where it has AVX-512 BF16, else by fused multiply-adds
# on the widened weights).
DTYPES = [torch.bfloat16, torch.float32] if {"avx2", "fma"} <= cpu_flags() else []
pytestmark = pytest.mark.skipif(layer_ops() is None or not DTYPES,
                                reason="needs the C++ build (a C++ compiler and ninja) and a CPU with AVX2 and FMA")
FMA_BF16 = pytest.mark.skipif("avx512_bf16" in cpu_flags(), reason="AVX-512 BF16 multiplies bfloat16 by vdpbf16ps")


def weights(outputs: int, inputs: int, dtype: torch.dtype = torch.bfloat16, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    weight = (torch.randn(outputs, inputs, generator=generator) * 0.05).to(dtype)
    bias = torch.randn(outputs, generator=generator).to(dtype)
    return weight, bias, generator


# SmolLM2's q/k/v and down projection, widths with a partial last block of columns, and inputs
# that are not a multiple of 32 (which AMX's tiles leave to vdpbf16ps).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("outputs,inputs", [(960, 576), (576, 1536), (37, 64), (20, 100), (5, 8)])
def test_every_row_gets_its_bits_alone(outputs, inputs, dtype):
    weight, bias, generator = weights(outputs, inputs, dtype)
    packed = layer_ops().pack(weight)
    rows = torch.randn(150, inputs, generator=generator).to(dtype)
    alone = torch.cat([layer_ops().product(row[None], packed, bias) for row in rows])
    # every tiling of the rows (product.cpp: all_rows, f32_rows), and float32's chunks of 64
    for m in (2, 3, 4, 5, 6, 7, 9, 10, 11, 16, 33, 70, 129, 150):
        assert torch.equal(layer_ops().product(rows[:m], packed, bias), alone[:m]), m


@pytest.mark.parametrize("dtype", DTYPES)
def test_within_rounding_of_the_exact_product(dtype):
    weight, bias, generator = weights(577, 576, dtype)
    rows = torch.randn(9, 576, generator=generator).to(dtype)
    out = layer_ops().product(rows, layer_ops().pack(weight), bias).double()
    exact = rows.double() @ weight.double().T + bias.double()
    magnitude = rows.double().abs() @ weight.double().abs().T + bias.double().abs()
    # a float32 sum of 576 products, plus one rounding to bfloat16 for bfloat16
    rounding = exact.abs() * 2 ** -8 if dtype == torch.bfloat16 else 0
    assert ((out - exact).abs() <= rounding + magnitude * 577 * 2 ** -24).all()


def test_sums_round_to_bfloat16_as_torch_converts():
    """Zero rows' sums are the bias itself, so their output is the float32 bias as the kernel
    rounds it: to nearest even, ties, denormals, infinities and NaN as torch converts them.
    (Not -0.0: 0 + -0.0 is +0.0 before any rounding.)
    Twenty columns: a full block of sixteen and a partial one."""
    one = 2.0 ** -8  # half of bfloat16's last place at 1: a tie
    bias = torch.tensor([1 + one, 1 + 3 * one, 1 + one + 2 ** -20, -(1 + one), -(1 + 3 * one), 2 ** -130,
                         -3 * 2 ** -140, 1e-45, float("nan"), float("inf"), -float("inf"), 3.4e38, -3.4e38, 0.0,
                         65504.0, 1 / 3, -2 / 3, 1 + one, 2 ** -126 * (1 + one), 2 ** -126 * (1 + 3 * one)], dtype=torch.float32)
    packed = layer_ops().pack(torch.zeros(20, 8, dtype=torch.bfloat16))
    out = layer_ops().product(torch.zeros(3, 8, dtype=torch.bfloat16), packed, bias)
    expected = bias.to(torch.bfloat16).expand(3, -1)
    assert torch.equal(out.isnan(), expected.isnan())
    numbers = ~expected.isnan()
    assert torch.equal(out[numbers].view(torch.int16), expected[numbers].view(torch.int16))


@FMA_BF16
@pytest.mark.parametrize("outputs,inputs", [(960, 576), (37, 64)])
def test_bfloat16_is_the_float32_product_of_the_widened_numbers_rounded_once(outputs, inputs):
    """Without AVX-512 BF16 a bfloat16 product is the float32 one (the same fused multiply-adds
    in the same order) on the weights and rows widened to float32, its sums rounded once."""
    weight, bias, generator = weights(outputs, inputs)
    rows = torch.randn(11, inputs, generator=generator).to(torch.bfloat16)
    for m in (1, 2, 4, 11):
        out = layer_ops().product(rows[:m], layer_ops().pack(weight), bias)
        widened = layer_ops().product(rows[:m].float(), layer_ops().pack(weight.float()), bias.float())
        assert torch.equal(out.view(torch.int16), widened.to(torch.bfloat16).view(torch.int16)), m


def test_bad_shapes_and_dtypes_are_named():
    weight, bias, _ = weights(32, 64, DTYPES[0])
    packed = layer_ops().pack(weight)
    with pytest.raises(RuntimeError, match="product: rows"):
        layer_ops().product(torch.zeros(2, 62, dtype=DTYPES[0]), packed, None)
    with pytest.raises(RuntimeError, match="product: Double rows for a"):
        layer_ops().product(torch.zeros(2, 64, dtype=torch.float64), packed, None)
    with pytest.raises(RuntimeError, match="K even"):
        layer_ops().pack(torch.zeros(4, 7, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="a bfloat16 or float32 weight"):
        layer_ops().pack(torch.zeros(4, 8, dtype=torch.float16))


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_layers_multiply_on_it_where_chosen(monkeypatch, dtype):
    """EAGLE3_PRODUCT=cpp packs the layers for it, and a row-invariant model needs no row
    limits then; =onednn keeps oneDNN's packing; another value is named."""
    layer = torch.nn.Linear(64, 48, bias=False).to(dtype)
    prepack_linears(layer)
    for choice, packed_dims in (("cpp", 3), ("onednn", 2)):
        monkeypatch.setenv("EAGLE3_PRODUCT", choice)
        native.own_products.cache_clear()
        layer.__dict__.pop("_packed", None)
        with torch.inference_mode():
            if choice == "onednn" and (dtype == torch.float32 or not onednn_packs(dtype)):
                assert not layer.packs()  # too small for oneDNN's float32; oneDNN packs no bfloat16 on AVX2
                continue
            assert layer.packed_weights().tensors()[0].dim() == packed_dims
            torch.testing.assert_close(layer(torch.ones(2, 64, dtype=dtype)).float(),
                                       torch.ones(2, 64) @ layer.weight.float().T, rtol=0.01, atol=0.01)
    monkeypatch.setenv("EAGLE3_PRODUCT", "cpp")
    native.own_products.cache_clear()
    model = torch.nn.Sequential(torch.nn.Linear(64, 48)).to(dtype)
    make_row_invariant(model)
    assert isinstance(model[0], PrepackedLinear) and model[0].row_limits == ANY_ROWS
    monkeypatch.setenv("EAGLE3_PRODUCT", "fast")
    native.own_products.cache_clear()
    with pytest.raises(ValueError, match="EAGLE3_PRODUCT: 'fast'"):
        native.own_products(dtype)
    native.own_products.cache_clear()
