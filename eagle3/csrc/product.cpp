// A bfloat16 matrix product whose every row gets the same bits however many rows come with
// it, for CPUs with AVX-512 BF16: rows [M, K] times a weight [N, K] -> [M, N] (plus a bias).
//
// Each output element is one float32 sum over k in one order written here: vdpbf16ps adds
// the products of a pair of inputs (k = 2q, 2q + 1) to the element's running sum, for q = 0,
// 1, ... in turn, then the bias, then one rounding to bfloat16. Rows are computed by the same
// instructions in the same order whether they come one at a time or with others (rows share
// only the weight loads), and the threads split the columns, never the sum. So a tree node
// or a batch row gets its one-token step's bits by construction, with no row limits to
// measure (eagle3.invariant).
//
// The weight is packed once into 16-column blocks, a pair of inputs per lane, so a block's
// pair is one 64-byte vector: [N, K / 2, 2] in shape, laid out as [N / 16][K / 2][16][2], the
// last block holding N % 16 columns where N is not a multiple of 16. One-token decoding is
// bound by reading the weight; this layout reads it in one stream per block with no
// per-call setup, where oneDNN's product pays a fixed cost of some microseconds per call,
// a large part of a small model's step.

#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

using at::Tensor;

namespace {
constexpr int64_t LANES = 16;  // columns of a block: float32 lanes of one vector
constexpr int64_t BLOCKS = 4;  // blocks a tile sums at once, four independent running sums a row
}  // namespace

#if defined(__x86_64__)  // elsewhere (ARM, say) the module builds without it and oneDNN multiplies
#define HAS_BF16_PRODUCT 1
#include <immintrin.h>

namespace {

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// float32 -> bfloat16 as c10::BFloat16 converts: to nearest even (denormals kept, where
// vcvtneps2bf16 would flush them), a NaN to a quiet NaN.
BF16_TARGET inline __m256i to_bf16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF))), 16);
  rounded = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), _mm512_set1_epi32(0x7FC0), rounded);
  return _mm512_cvtepi32_epi16(rounded);
}

// R rows (their pairs [R][pairs] as 32-bit words) times B blocks of `width` columns each
// (LANES, or fewer in a last partial block) -> float32 sums, plus the bias, each rounded once
// to bfloat16 (to_bf16) and stored to out.
// R and B are constants, so that the R * B running sums can stay in registers.
template <int R, int B>
BF16_TARGET void tile(const uint32_t* rows, int64_t pairs, const uint16_t* weight, int64_t block_stride,
                      int64_t width, const float* bias, uint16_t* out, int64_t out_stride) {
  const __mmask16 lanes = width == LANES ? 0xFFFF : static_cast<__mmask16>((1u << width) - 1);
  // The loops over r and b are unrolled in full, so that the sums live in registers.
  __m512 sums[R][B];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b) sums[r][b] = _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q) {
    __m512i w[B];
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b) w[b] = _mm512_maskz_loadu_epi32(lanes, weight + b * block_stride + q * width * 2);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512i x = _mm512_set1_epi32(static_cast<int>(rows[r * pairs + q]));
#pragma GCC unroll 16
      for (int b = 0; b < B; ++b) sums[r][b] = _mm512_dpbf16_ps(sums[r][b], (__m512bh)x, (__m512bh)w[b]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b) {
      __m512 sum = sums[r][b];
      if (bias != nullptr) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(lanes, bias + b * LANES));
      _mm256_mask_storeu_epi16(out + r * out_stride + b * LANES, lanes, to_bf16(sum));
    }
}

// Every row times B blocks. A tile of R rows makes R * B independent running sums, and with
// fewer than about 16 of them each vdpbf16ps waits on the one before it in its sum, so the
// rows go in tiles of four, and the last four to seven (or all of fewer than four) in one or
// two tiles of their own size (at most 24 sums, which with the weights' vectors fit the 32
// registers). A row's sums are the same in any tile.
template <int B>
BF16_TARGET void all_rows(const uint32_t* rows, int64_t m, int64_t pairs, const uint16_t* weight,
                          int64_t block_stride, int64_t width, const float* bias, uint16_t* out, int64_t n) {
  int64_t r = 0;
  auto rows_of = [&](auto kernel, int64_t count) {
    kernel(rows + r * pairs, pairs, weight, block_stride, width, bias, out + r * n, n);
    r += count;
  };
  while (m - r >= 8) rows_of(tile<4, B>, 4);
  switch (m - r) {
    case 7: rows_of(tile<4, B>, 4); rows_of(tile<3, B>, 3); break;
    case 6: rows_of(tile<6, B>, 6); break;
    case 5: rows_of(tile<5, B>, 5); break;
    case 4: rows_of(tile<4, B>, 4); break;
    case 3: rows_of(tile<3, B>, 3); break;
    case 2: rows_of(tile<2, B>, 2); break;
    case 1: rows_of(tile<1, B>, 1); break;
  }
}

// The threads split the blocks evenly; each goes through its own in groups of BLOCKS (the
// partial last block alone).
BF16_TARGET void multiply(const uint32_t* rows, int64_t m, int64_t pairs, const uint16_t* weight, int64_t n,
                          const float* bias, uint16_t* out) {
  const int64_t full = n / LANES, tail = n % LANES, block_stride = pairs * LANES * 2;
  at::parallel_for(0, full + (tail ? 1 : 0), BLOCKS, [&](int64_t begin, int64_t end) {
    for (int64_t first = begin, count; first < end; first += count) {
      const uint16_t* w = weight + first * block_stride;
      const float* b = bias == nullptr ? nullptr : bias + first * LANES;
      uint16_t* o = out + first * LANES;
      count = first == full ? 1 : std::min({BLOCKS, end - first, full - first});
      switch (first == full ? 0 : count) {
        case 0: all_rows<1>(rows, m, pairs, w, block_stride, tail, b, o, n); break;
        case 1: all_rows<1>(rows, m, pairs, w, block_stride, LANES, b, o, n); break;
        case 2: all_rows<2>(rows, m, pairs, w, block_stride, LANES, b, o, n); break;
        case 3: all_rows<3>(rows, m, pairs, w, block_stride, LANES, b, o, n); break;
        default: all_rows<BLOCKS>(rows, m, pairs, w, block_stride, LANES, b, o, n);
      }
    }
  });
}

}  // namespace
#endif

// weight [N, K] (K even) -> the packed weight [N, K / 2, 2] in the block layout above.
Tensor pack_bf16(const Tensor& weight) {
  TORCH_CHECK(weight.dim() == 2 && weight.size(1) % 2 == 0, "pack_bf16: a weight [N, K] with K even, not ",
              weight.sizes());
  const int64_t n = weight.size(0), k = weight.size(1), pairs = k / 2;
  const auto source = weight.to(at::kBFloat16).contiguous();
  auto packed = at::empty({n, pairs, 2}, source.options());
  const auto* from = reinterpret_cast<const uint32_t*>(source.data_ptr());  // a pair is one 32-bit word
  auto* to = reinterpret_cast<uint32_t*>(packed.data_ptr());
  for (int64_t first = 0; first < n; first += LANES) {
    const int64_t width = std::min(LANES, n - first);
    for (int64_t q = 0; q < pairs; ++q)
      for (int64_t c = 0; c < width; ++c) to[first * pairs + q * width + c] = from[(first + c) * pairs + q];
  }
  return packed;
}

// rows [M, K] bfloat16 times the packed weight [N, K / 2, 2], plus bias [N] (any float dtype)
// -> [M, N] bfloat16.
Tensor bf16_product(const Tensor& rows, const Tensor& packed, const c10::optional<Tensor>& bias) {
#ifndef HAS_BF16_PRODUCT
  TORCH_CHECK(false, "bf16_product: built for x86-64 CPUs with AVX-512 BF16 only");
  return Tensor();
#else
  TORCH_CHECK(__builtin_cpu_supports("avx512bf16"), "bf16_product: this CPU has no AVX-512 BF16");
  TORCH_CHECK(rows.dim() == 2 && packed.dim() == 3 && rows.size(1) == 2 * packed.size(1),
              "bf16_product: rows ", rows.sizes(), " for a packed weight ", packed.sizes());
  TORCH_CHECK(rows.scalar_type() == at::kBFloat16 && packed.scalar_type() == at::kBFloat16,
              "bf16_product: bfloat16 rows and weight");
  const auto x = rows.contiguous();
  const int64_t m = x.size(0), n = packed.size(0);
  auto out = at::empty({m, n}, x.options());
  Tensor b;
  if (bias.has_value() && bias->defined()) b = bias->to(at::kFloat).contiguous();
  multiply(reinterpret_cast<const uint32_t*>(x.data_ptr()), m, packed.size(1),
           reinterpret_cast<const uint16_t*>(packed.data_ptr()), n, b.defined() ? b.data_ptr<float>() : nullptr,
           reinterpret_cast<uint16_t*>(out.data_ptr()));
  return out;
#endif
}
