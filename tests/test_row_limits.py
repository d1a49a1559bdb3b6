"""The row limits that keep bfloat16 products row-invariant (eagle3.invariant): how a product
is split and padded, and how the limits are chosen from what a CPU's kernels do. The kernels
here are made up, so these checks run on any CPU; tests/test_invariant.py checks the real
ones through the decoders where `auto` picks bfloat16."""

import pytest
import torch

from eagle3.invariant import (ANY_ROWS, GEMM_ROWS, PROBE_WIDTHS, RowInvariantLinear, RowLimits, by_rows, measure_row_limits,
                              onednn_packs, row_limits)
from eagle3.native import own_products
from eagle3.target import exact_bf16


def recording(weight: torch.Tensor, calls: list[int]):
    def product(rows):
        calls.append(len(rows))
        return rows.float() @ weight.float().T
    return product


def test_products_are_split_to_max_rows_and_padded_to_min_rows():
    generator = torch.Generator().manual_seed(0)
    weight, calls = torch.randn(3, 5, generator=generator), []
    x = torch.randn(2, 9, 5, generator=generator)  # 18 rows: 8 + 8 + 2
    out = by_rows(recording(weight, calls), x, RowLimits(min_rows=4, max_rows=8))
    assert calls == [8, 8, 4] and out.shape == (2, 9, 3)
    # 8 and 18 rows may take different kernels: equal up to float32 rounding, not bit for bit
    torch.testing.assert_close(out, x @ weight.T)
    calls.clear()
    torch.testing.assert_close(by_rows(recording(weight, calls), x[0, :1], RowLimits(min_rows=2)), x[0, :1] @ weight.T)
    assert calls == [2]  # one row, multiplied beside a zero row


def exact(weight):
    """Each row's bits whatever the number of rows: float64 sums of bfloat16 products, rounded."""
    return lambda rows: (rows.double() @ weight.double().T).to(torch.bfloat16)


def one_row_rounds_its_own_way(weight):
    """As oneDNN on AVX-512 BF16 without AMX: a one-row product over more than 1,024 inputs
    takes another path, which rounds differently."""
    def product(rows):
        out = exact(weight)(rows)
        return out + (len(rows) == 1 and weight.shape[1] > 1024) * out.abs() * 2 ** -7
    return product


def wide_products_round_their_own_way(weight):
    """As a kernel that switches at 9 rows: every row of a 9-row product rounds differently."""
    def product(rows):
        out = exact(weight)(rows)
        return out + (len(rows) >= 9) * out.abs() * 2 ** -7
    return product


def test_limits_follow_what_the_kernels_do():
    for width in (576, 1536):
        assert measure_row_limits(exact, width) == RowLimits(1, GEMM_ROWS)
        assert measure_row_limits(wide_products_round_their_own_way, width) is None  # no exact bfloat16 here
    assert measure_row_limits(one_row_rounds_its_own_way, 576) == RowLimits(1, GEMM_ROWS)
    assert measure_row_limits(one_row_rounds_its_own_way, 1536) == RowLimits(2, GEMM_ROWS)  # padded


@pytest.mark.skipif(not exact_bf16(torch.device("cpu")), reason="auto keeps float32 on this CPU")
def test_a_bfloat16_target_takes_this_cpus_limits_per_input_width():
    """oneDNN's products within their measured limits; the C++ product, where it multiplies,
    without any (tests/test_product.py)."""
    from tests.test_invariant import WIDE, exact_target

    if onednn_packs(torch.bfloat16):  # (an AVX2 CPU has no oneDNN bfloat16, and the C++ product multiplies)
        assert all(row_limits(width) in (RowLimits(1, GEMM_ROWS), RowLimits(2, GEMM_ROWS)) for width in PROBE_WIDTHS)
    target = exact_target(**WIDE)  # bfloat16 where exact_bf16
    for module in target.model.modules():
        if isinstance(module, RowInvariantLinear):
            assert module.row_limits == (ANY_ROWS if own_products(torch.bfloat16) else row_limits(module.in_features))
    assert target.layers[0].mlp.down_proj.in_features == 1536
