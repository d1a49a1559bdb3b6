"""Batch-invariant arithmetic: what makes greedy decoding token-exact in bfloat16 on a CPU
(and in float32 where the C++ float32 product runs: the last paragraph), for a verified tree
and for rows decoded together.

Verifying a tree runs n tokens through the target in one forward; plain decoding runs them
one by one; a batch runs several rows' tokens together. Lossless greedy decoding needs each
token's logits to equal, bit for bit, those of the one-token step of its own sequence. With
stock float32 kernels they agree to about 1e-5, which rarely flips an argmax. In bfloat16 every
layer rounds its output to 8 bits of mantissa, and a difference in the last bit grows into
logit differences of 0.5 over 30 layers, enough to flip an argmax now and then.

Two kernels depend on the shape of the call, measured with oneDNN on AMX and on AVX-512 BF16:
- Attention sums over keys in blocks and vector lanes, so its rounding depends on the number
  of queries, on how far the key axis runs past a query under the mask, and, in a tree, on
  where a node's ancestors sit among its siblings. `invariant_attention` runs
  eagle3/csrc/attention.cpp (built by eagle3.native), which skips the masked keys and sums
  over the kept ones in float32 in one fixed order, so a row's bits depend on nothing but its
  own query, keys and values: exact by construction. Where the C++ cannot be built, it does
  the arithmetic in float64 instead: bfloat16 products are exact there, sums of them in any
  order agree to about 1e-16, and the rounding back to bfloat16 (steps of about 4e-3) erases
  that. Either way the cache stores keys and values in the dtype the attention reads
  (`cache_dtype`), converted once, when written.
- Linear layers. On AMX each row gets the bits of a one-row product up to 32 rows per
  matrix product; from 33 rows on oneDNN switches kernels and rows round differently (every
  SmolLM2 shape, 1 and 2 threads). A 16-node tree stays under that, but a batch of trees or
  a prompt does not, so `RowInvariantLinear` multiplies at most GEMM_ROWS rows at a time.
  On AVX-512 BF16 without AMX (an AMD EPYC) products of 2 to 64 rows agree row for row, but
  a one-row product over more than 1,024 inputs (the MLP's down projection) takes another
  path and rounds differently; so there a one-row product is padded with a zero row.
  `row_limits` measures which of the two a CPU needs, once per process. Where the C++ module
  is built, eagle3/csrc/product.cpp multiplies instead (eagle3.native `own_products`): every
  output a float32 sum in one order, whatever the number of rows, so exact by construction,
  with no limits, and faster than oneDNN on the few rows of decoding: by AMX's tiles (rows
  independent in the hardware), by vdpbf16ps on AVX-512 BF16, and on a CPU with AVX2 and
  FMA alone, where oneDNN has no bfloat16 at all, by fused multiply-adds on the bfloat16
  weights widened to float32 in the registers (half the bytes a float32 weight takes).

The bfloat16 products run on weights that oneDNN has reordered once into its own blocked
layout (`torch.ops.mkldnn._reorder_linear_weight`), as inference engines prepack them: a
stock `F.linear` reorders them again at every call, which for the one-row products of
plain decoding doubles the memory traffic (measured on AMX: 131 against 69 microseconds a
1536 x 576 product with cold caches). The prepacked product gives a row the bits of the
stock one-row product, and each of up to 64 rows the bits it gets alone (every SmolLM2
shape, 2 threads); tests/test_invariant.py checks the decoders bit for bit on top. Layers
that read one input (q/k/v, gate/up) multiply as one product on their stacked weights
(`SharedInput`): 121 oneDNN calls a SmolLM2 token instead of 211, with the same bits.

float32 targets on a CPU (`--dtype float32`, or where `auto` finds no exact bfloat16) run
the same arithmetic where the CPU has AVX2 and FMA: eagle3/csrc/product.cpp has a float32 product too (one fused
multiply-add per input, in one order), and with the C++ attention, which sums in float32
already, every row keeps its bits by construction there as well. That is for exactness and
for speed alike: oneDNN's and MKL's float32 products of two to sixteen rows cost about as
many one-row products on these CPUs, and the C++ one reads a weight for a few rows about as
fast as for one (docs/results.md). Where the C++ cannot be built, float32 targets keep their
own attention and multiply their large products on oneDNN's prepacked, stacked weights, for
speed alone (at least FLOAT32_PREPACKED_ELEMENTS weights: oneDNN's fixed cost per call is
larger than MKL's); float32 sums in another order agree to about 1e-5, which rarely flips
a greedy choice, but is not claimed exact. Either way the packed copy sits
beside the model's own weights, which the state dict and training still read.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import eager_mask

from eagle3.native import layer_ops, own_products

NAME = "eagle3_invariant"
GEMM_ROWS = 32  # the most rows oneDNN multiplies with one-row bits (above)
PREPACKED_DTYPES = (torch.bfloat16, torch.float32)
# A float32 one-row product on oneDNN's packed weight reads it faster than MKL's stock sgemm
# but pays a larger fixed cost per call: it pays from about this many weights (SmolLM2's
# stacked gate/up and its lm_head; not its 576 x 576 or down projections, nor small models).
FLOAT32_PREPACKED_ELEMENTS = 2**20


def invariant_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """query [B, H, q, D], key / value [B, H_kv, L, D], attention_mask additive [B, 1, q, L]
    (0 where a key is kept) or None. Returns ([B, q, H, D], None), as transformers' attention
    functions do: the C++ attention's, else float64_attention's."""
    ops = layer_ops()
    if ops is not None:
        return ops.attention(query, key, value, attention_mask, scaling), None
    return float64_attention(query, key, value, attention_mask, scaling), None


def float64_attention(query, key, value, attention_mask, scaling) -> torch.Tensor:
    """invariant_attention where the C++ cannot be built: the same arguments -> [B, q, H, D]."""
    b, heads, q, d = query.shape
    kv_heads, length = key.shape[1], key.shape[2]
    # Grouped-query attention without copies: the query heads of one key head become rows of
    # one batched product, on 3-D views (a 4-D matmul reshapes and expands at every call).
    rows = query.to(torch.float64, memory_format=torch.contiguous_format).view(b * kv_heads, heads // kv_heads * q, d)
    keys = key.to(torch.float64).reshape(b * kv_heads, length, d)  # views of a float64 cache's buffers
    values = value.to(torch.float64).reshape(b * kv_heads, length, d)
    scores = torch.bmm(rows, keys.transpose(1, 2)).mul_(scaling)  # [B * H_kv, groups * q, L]
    if attention_mask is not None:
        scores = (scores.view(b, heads, q, length) + attention_mask[..., :length]).view_as(scores)
    out = torch.bmm(torch.softmax(scores, dim=-1), values).view(b, heads, q, d)
    return out.transpose(1, 2).to(query.dtype, memory_format=torch.contiguous_format)


AttentionInterface.register(NAME, invariant_attention)
AttentionMaskInterface.register(NAME, eager_mask)


@functools.cache
def onednn_packs(dtype: torch.dtype) -> bool:
    """Whether oneDNN can reorder weights of this dtype into its layout on this CPU: float32
    on any x86 CPU; bfloat16 needs avx512bw, avx512vl and avx512dq, or avx_ne_convert, and is
    refused on an AVX2-only CPU."""
    try:
        torch.ops.mkldnn._reorder_linear_weight(torch.zeros(1, 1, dtype=dtype), 1)
    except RuntimeError:
        return False
    return True


@dataclass(frozen=True)
class RowLimits:
    """How a product's rows keep the bits they get in any other product: products of fewer
    than min_rows rows are padded with zero rows, larger ones split into at most max_rows."""

    min_rows: int = 1
    max_rows: int | None = None  # None: all rows at once


# Where no limits are wanted (the head's drafts) or none were found.
ANY_ROWS = RowLimits()
PROBE_OUTPUTS = 576  # the outputs of a probe's random weight (the kernels' choices follow the inputs)
PROBE_TRIALS = 4
# The input widths whose limits decide whether a CPU has exact bfloat16: SmolLM2's 576, and
# its down projection's 1,536, over the 1,024 inputs past which AVX-512 BF16 pads.
PROBE_WIDTHS = (576, 1536)


@functools.cache
def row_limits(in_features: int) -> RowLimits | None:
    """This CPU's row limits for the decoders' own prepacked bfloat16 product over in_features
    inputs (measure_row_limits), measured once per width and process, in milliseconds; None
    where oneDNN packs no bfloat16."""
    if not onednn_packs(torch.bfloat16):
        return None

    def prepacked(weight):
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, 1)
        return lambda rows: torch.ops.mkldnn._linear_pointwise(rows, packed, None, "none", [], "")

    return measure_row_limits(prepacked, in_features)


def exact_rows() -> bool:
    """Whether this CPU's bfloat16 products keep every row's bits: by construction where the C++
    product multiplies, else within some row limits of oneDNN's at the PROBE_WIDTHS
    (eagle3.target.exact_bf16 asks, before any model is loaded)."""
    return own_products(torch.bfloat16) is not None or all(row_limits(width) is not None for width in PROBE_WIDTHS)


def measure_row_limits(make_product, in_features: int) -> RowLimits | None:
    """The row limits under which products over in_features inputs give every row the same
    bits for any number of rows up to GEMM_ROWS: one-row products as they are where they
    agree with larger ones (AMX; AVX-512 BF16 up to 1,024 inputs), else padded to two rows
    (AVX-512 BF16 beyond); None where neither holds. make_product(weight [out, in]) gives a
    product, rows [m, in] -> [m, out]. Tried on a random bfloat16 weight [PROBE_OUTPUTS,
    in_features], every m from 1 to GEMM_ROWS, PROBE_TRIALS inputs each."""
    generator = torch.Generator().manual_seed(0)
    candidates = [RowLimits(1, GEMM_ROWS), RowLimits(2, GEMM_ROWS)]
    with torch.inference_mode():
        product = make_product(torch.randn(PROBE_OUTPUTS, in_features, generator=generator).to(torch.bfloat16) * 0.05)
        for _ in range(PROBE_TRIALS):  # a row that rounds differently does so in a few of its outputs only
            rows = torch.randn(GEMM_ROWS, in_features, generator=generator).to(torch.bfloat16)
            together = [product(rows[:m]) for m in range(1, GEMM_ROWS + 1)]
            for limits in list(candidates):
                alone = torch.cat([by_rows(product, row, limits) for row in rows.split(1)])
                if not all(torch.equal(out, alone[:len(out)]) for out in together[limits.min_rows - 1:]):
                    candidates.remove(limits)
    return candidates[0] if candidates else None


def prepackable(weight: torch.Tensor, elements: int) -> bool:
    """Whether a product on this weight (of `elements` weights in all, stacked ones included)
    runs prepacked, on a CPU, no gradient wanted, and not inside torch.compile, which cannot
    take the packed weight as a graph input (inductor's lowering of the oneDNN op asserts on
    it) and lowers the stock product itself: where the C++ product multiplies its dtype
    (own_product), else bfloat16, or float32 of at least FLOAT32_PREPACKED_ELEMENTS, where
    oneDNN packs it."""
    if weight.dtype not in PREPACKED_DTYPES or weight.device.type != "cpu" or torch.compiler.is_compiling() or (
            torch.is_grad_enabled() and weight.requires_grad):
        return False
    return own_product(weight) is not None or (
        weight.dtype != torch.float32 or elements >= FLOAT32_PREPACKED_ELEMENTS) and onednn_packs(weight.dtype)


def own_product(weight: torch.Tensor):
    """The C++ module whose product (eagle3/csrc/product.cpp) multiplies this prepackable
    weight [out, in] where eagle3.native picks it for its dtype (bfloat16 with an even number
    of inputs); else None (oneDNN's)."""
    ops = own_products(weight.dtype)
    return ops if ops is not None and (weight.dtype != torch.bfloat16 or weight.shape[1] % 2 == 0) else None


def products_kernel(weight: torch.Tensor) -> str:
    """What multiplies a linear layer with this weight in decoding: "C++" with the instructions
    it runs (eagle3/csrc/product.cpp; e.g. "C++, AMX"), "oneDNN" (on its prepacked weight) or
    "stock" (F.linear)."""
    with torch.inference_mode():
        if not prepackable(weight, weight.numel()):
            return "stock"
    ops = own_product(weight)
    return "oneDNN" if ops is None else f"C++, {ops.product_instructions(weight.dtype == torch.bfloat16)}"


class PackedWeights:
    """The weights (and biases) of one or more linear layers, stacked [sum of out, in] and
    reordered once into oneDNN's layout, and again whenever one of them changes: `product()`
    maps rows [M, in] to [M, sum of out]."""

    def __init__(self, layers: list[torch.nn.Linear]):
        self.layers, self._key = layers, None

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The packed weight and the stacked bias (None without one), packed again first if a
        layer's weight or bias changed."""
        # Read at every call: through _parameters, a list, since Module.__getattr__ and a
        # generator cost more than the check itself.
        key = [(p.data_ptr(), p._version) for layer in self.layers for p in layer._parameters.values() if p is not None]
        if key != self._key:
            # One layer's weight is copied too: once, and the reorder copies it anyway.
            weight = torch.cat([layer.weight.detach() for layer in self.layers])
            bias = None if self.layers[0].bias is None else torch.cat([layer.bias.detach() for layer in self.layers])
            ops = own_product(weight)
            if ops is not None:  # eagle3/csrc/product.cpp: every row's bits by construction
                packed = ops.pack(weight)
                self._product = lambda rows: ops.product(rows, packed, bias)
            else:
                packed = torch.ops.mkldnn._reorder_linear_weight(weight, 1)
                self._product = lambda rows: torch.ops.mkldnn._linear_pointwise(rows, packed, bias, "none", [], "")
            self._tensors = packed, bias
            self._key = key
        return self._tensors

    def product(self):
        self.tensors()
        return self._product


def by_rows(product, x: torch.Tensor, limits: RowLimits) -> torch.Tensor:
    """x [..., in] -> [..., out]: `product` over x's rows, at most limits.max_rows at a time,
    each product padded with zero rows up to limits.min_rows."""
    rows = x.reshape(-1, x.shape[-1])
    if limits.max_rows and len(rows) > limits.max_rows:
        out = torch.cat([padded_product(product, chunk, limits.min_rows) for chunk in rows.split(limits.max_rows)])
    else:  # one product, with no copy through cat: decoding's steps and small trees
        out = padded_product(product, rows, limits.min_rows)
    return out.view(*x.shape[:-1], out.shape[-1])


def padded_product(product, rows: torch.Tensor, min_rows: int) -> torch.Tensor:
    """product(rows) [m, in] -> [m, out], computed on at least min_rows rows."""
    if len(rows) >= min_rows:
        return product(rows)
    return product(torch.cat([rows, rows.new_zeros(min_rows - len(rows), rows.shape[1])]))[:len(rows)]


class PrepackedLinear(torch.nn.Linear):
    """nn.Linear on its weight prepacked for oneDNN where it is bfloat16, or float32 and large
    enough, on a CPU and no gradient is wanted (prepackable); elsewhere the stock product.
    Same weights, same state dict. A layer in a SharedInput takes its columns of the group's
    one product."""

    shared_input: SharedInput | None = None
    row_limits: RowLimits = ANY_ROWS

    def packs(self) -> bool:
        """Whether its products run on the packed weight (its group's, where it has one)."""
        group = self.shared_input
        return prepackable(self.weight, group.elements if group is not None else self.weight.numel())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        group = self.shared_input
        if self.packs():
            return group.output(self, x) if group is not None else self.packed_product(x)
        if self.row_limits == ANY_ROWS:
            return F.linear(x, self.weight, self.bias)
        return by_rows(lambda rows: F.linear(rows, self.weight, self.bias), x, self.row_limits)

    def packed_product(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., in] -> [..., out] on the packed weight, within the row limits (where
        prepackable; eagle3.decoder_layer calls it without the module's call)."""
        return by_rows(self.packed_weights().product(), x, self.row_limits)

    def packed_weights(self) -> PackedWeights:
        if "_packed" not in self.__dict__:  # made on first use: the class is swapped in, no __init__ runs
            self._packed = PackedWeights([self])
        return self._packed


class RowInvariantLinear(PrepackedLinear):
    """A PrepackedLinear whose products keep this CPU's row limits, so each row gets the bits it
    would get alone. `make_row_invariant` turns a model's linear layers into it and gives them
    the measured limits (`row_limits`); where none were found they keep to GEMM_ROWS, as on AMX."""

    row_limits = RowLimits(1, GEMM_ROWS)


# Linear layers of one module that read the same input: attention's projections, the MLP's
# gate and up (Llama, Qwen, Mistral and the EAGLE-3 head name them so).
SHARED_INPUTS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class SharedInput:
    """Linear layers that read one input, multiplied as one product on their stacked weights:
    one oneDNN call instead of two or three, which for the small one-row products of
    decoding costs about as much as one of them (their fixed cost per call dominates). The
    first layer called computes every member's columns; the others take theirs while the
    input is the same tensor object, so the result never depends on the order of the calls,
    and the stored product is dropped once each member has taken its part. On AMX the
    columns have the bits of each member's own product (measured, every SmolLM2 shape);
    exactness needs only that the stacked product gives a row the same bits whatever the
    number of rows, which tests/test_invariant.py checks through the decoders."""

    def __init__(self, members: list[PrepackedLinear]):
        self.members = members
        self.widths = [member.out_features for member in members]
        edges = [0, *itertools.accumulate(self.widths)]
        self.columns = {id(member): slice(a, b) for member, a, b in zip(members, edges, edges[1:])}
        self.elements = sum(member.weight.numel() for member in members)  # of the stacked weight
        self.weights = PackedWeights(members)
        self._input, self._waiting = None, []

    def output(self, member: PrepackedLinear, x: torch.Tensor) -> torch.Tensor:
        """x [..., in] -> member's x @ W.T + b [..., out], bits of the stacked product."""
        if not (x is self._input and id(member) in self._waiting):
            self._output = self.product(x)
            self._input = x
            self._waiting = [id(m) for m in self.members]
        self._waiting.remove(id(member))
        out = self._output[..., self.columns[id(member)]]
        if not self._waiting:  # every member has its part: let the input and product go
            self._input = self._output = None
        return out

    def product(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., in] -> every member's columns [..., sum of out], in the members' order."""
        return by_rows(self.weights.product(), x, self.members[0].row_limits)


def share_inputs(model: torch.nn.Module) -> None:
    """Group the model's PrepackedLinear layers that read one input (SHARED_INPUTS), where
    they agree on input width, dtype, device and whether they have a bias."""
    for module in model.modules():
        for names in SHARED_INPUTS:
            members = [getattr(module, name, None) for name in names]
            if not all(isinstance(m, PrepackedLinear) for m in members):
                continue
            if len({(m.in_features, m.weight.dtype, m.weight.device, m.bias is None, m.row_limits) for m in members}) == 1:
                group = SharedInput(members)
                for m in members:
                    m.shared_input = group


def prepack_linears(model: torch.nn.Module, kind: type[PrepackedLinear] = PrepackedLinear,
                    limits: Callable[[int], RowLimits | None] | None = None) -> None:
    """Give every nn.Linear of the model the forward of `kind`, in place (only the class
    changes), the row limits of its input width where `limits` gives some (an attribute, so
    that compiled graphs read no probe), and layers that read one input one product
    (SharedInput), and packs their weights (pack_now). The EAGLE-3 head takes
    PrepackedLinear: its drafts need speed, not invariance. A model given its arithmetic
    before (then cast to another dtype, say) takes the new one: its layers lose their packed
    weights, limits and groups first."""
    for module in model.modules():
        if type(module) in (torch.nn.Linear, PrepackedLinear, RowInvariantLinear):
            for stale in ("_packed", "row_limits", "shared_input"):
                module.__dict__.pop(stale, None)
            module.__class__ = kind
            if limits is not None and limits(module.in_features) is not None:
                module.row_limits = limits(module.in_features)
    share_inputs(model)
    pack_now(model)


def pack_now(model: torch.nn.Module) -> None:
    """Pack the weights of the model's prepackable layers now rather than at their first
    product, so that loading pays for it (reading every weight once, a second or two for the
    135M target) and not the first timed decode."""
    with torch.inference_mode():
        for module in model.modules():
            if isinstance(module, PrepackedLinear) and module.packs():
                group = module.shared_input
                (group.weights if group is not None else module.packed_weights()).tensors()


def make_row_invariant(model: torch.nn.Module) -> None:
    """The target's linear layers as RowInvariantLinear, each within this CPU's row limits for
    its input width where they were found (else GEMM_ROWS rows a product); where the C++
    product multiplies the model's dtype, any number of rows at once, since it needs no limits."""
    own = own_products(next(model.parameters()).dtype) is not None
    prepack_linears(model, RowInvariantLinear, (lambda width: ANY_ROWS) if own else row_limits)


def cache_dtype(model) -> torch.dtype | None:
    """The dtype this attention reads keys and values in, so the cache stores them that way
    (converted once, when written, instead of the whole cache at every layer of every step):
    float32 for the C++ attention, float64 for the Python one; None (the model's dtype) for
    any other attention."""
    if model.config._attn_implementation != NAME:
        return None
    return torch.float64 if layer_ops() is None else torch.float32


def wants_invariant_arithmetic(device: torch.device, dtype: torch.dtype) -> bool:
    """CPU targets in 16-bit floats, and in float32 where the C++ product multiplies float32
    (with the C++ attention, their every row's bits by construction too). CUDA kernels are
    another matter (see the README)."""
    return device.type == "cpu" and (dtype in (torch.bfloat16, torch.float16) or (
        dtype == torch.float32 and own_products(torch.float32) is not None))
