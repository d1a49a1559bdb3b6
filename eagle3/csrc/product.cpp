// Matrix products whose every row gets the same bits however many rows come with it: rows
// [M, K] times a weight [N, K] -> [M, N] (plus a bias), in bfloat16 and float32, for CPUs
// with AMX, AVX-512 BF16 or AVX2 and FMA.
//
// Each output element is one float32 sum over k in one order, then the bias, and in bfloat16
// one rounding: with AMX, TDPBF16PS adds the products of 32 inputs at a time (16 pairs) to
// the element's running sum, the hardware's order within them; with AVX-512 BF16 vdpbf16ps
// adds the products of a pair of inputs (k = 2q, 2q + 1), for q = 0, 1, ... in turn; with
// AVX2 each k is one fused multiply-add, k = 0, 1, ... in turn. A CPU runs one of the three,
// so its sums keep one order (the orders differ in the last bits, across CPUs only). Rows are
// computed by the same instructions in the same order whether they come one at a time or
// with others (rows share only the weight loads), and the threads split the columns, never
// the sum. So a tree node or a batch row gets its one-token step's bits by construction,
// with no row limits to measure (eagle3.invariant).
//
// The weight is packed once into 16-column blocks, one 32-bit word of inputs per lane (a
// pair of bfloat16 inputs, or one float32), so a block's word is one 64-byte line: [N, K / 2,
// 2] or [N, K, 1] in shape, laid out as [N / 16][K / 2][16][2] or [N / 16][K][16], the last
// block holding N % 16 columns where N is not a multiple of 16. One-token decoding is bound
// by reading the weight; this layout reads it in one stream per block with no per-call
// setup, where oneDNN's product pays a fixed cost of some microseconds per call, a large part
// of a small model's step, and its float32 products of two or more rows cost about as many
// one-row products (docs/results.md).

#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

using at::Tensor;

namespace {
constexpr int64_t LANES = 16;  // columns of a block: float32 lanes of one vector
constexpr int64_t BLOCKS = 4;  // blocks a tile sums at once, four independent running sums a row
constexpr int64_t CHUNK_ROWS = 64;  // rows of a float32 product that pass over its weight together

// A weight's n columns as blocks of LANES, blocks [begin, end) of them in groups of up to
// `group` full blocks: visit(first block, count), the partial last block alone as count 0.
template <typename Visit>
void in_groups(int64_t n, int64_t group, int64_t begin, int64_t end, const Visit& visit) {
  const int64_t full = n / LANES;
  for (int64_t first = begin, count; first < end; first += count) {
    count = first == full ? 1 : std::min({group, end - first, full - first});
    visit(first, first == full ? 0 : count);
  }
}

// The threads split the blocks evenly: each calls work(begin, end) on its share.
template <typename Work>
void over_block_ranges(int64_t n, const Work& work) {
  at::parallel_for(0, (n + LANES - 1) / LANES, BLOCKS, work);
}

// Each thread goes through its share of the blocks in_groups.
template <typename Visit>
void over_blocks(int64_t n, int64_t group, const Visit& visit) {
  over_block_ranges(n, [&](int64_t begin, int64_t end) { in_groups(n, group, begin, end, visit); });
}

// Rows [0, m) in tiles: fours while eight or more remain, then the last four to seven (or all
// of fewer than four) in one or two tiles of their own size, seven as four and three:
// tile(std::integral_constant<int, R>, first row) for each, so that R can size a kernel's
// registers.
template <typename Tile>
void in_tiles(int64_t m, const Tile& tile) {
  int64_t r = 0;
  auto take = [&](auto size) {
    tile(size, r);
    r += size;
  };
  using std::integral_constant;
  while (m - r >= 8) take(integral_constant<int, 4>{});
  switch (m - r) {
    case 7: take(integral_constant<int, 4>{}); take(integral_constant<int, 3>{}); break;
    case 6: take(integral_constant<int, 6>{}); break;
    case 5: take(integral_constant<int, 5>{}); break;
    case 4: take(integral_constant<int, 4>{}); break;
    case 3: take(integral_constant<int, 3>{}); break;
    case 2: take(integral_constant<int, 2>{}); break;
    case 1: take(integral_constant<int, 1>{}); break;
  }
}

}  // namespace

#if defined(__x86_64__)  // elsewhere (ARM, say) the module builds without it and oneDNN multiplies
#define HAS_OWN_PRODUCT 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

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
// rows go in_tiles, mostly of four (at most six: 24 sums, which with the weights' vectors
// fit the 32 registers). A row's sums are the same in any tile.
template <int B>
BF16_TARGET void all_rows(const uint32_t* rows, int64_t m, int64_t pairs, const uint16_t* weight,
                          int64_t block_stride, int64_t width, const float* bias, uint16_t* out, int64_t n) {
  in_tiles(m, [&](auto size, int64_t r) {
    tile<decltype(size)::value, B>(rows + r * pairs, pairs, weight, block_stride, width, bias, out + r * n, n);
  });
}

// The threads split the blocks evenly; each goes through its own in groups of BLOCKS (the
// partial last block alone).
BF16_TARGET void multiply(const uint32_t* rows, int64_t m, int64_t pairs, const uint16_t* weight, int64_t n,
                          const float* bias, uint16_t* out) {
  const int64_t block_stride = pairs * LANES * 2;
  over_blocks(n, BLOCKS, [&](int64_t first, int64_t count) {
    const uint16_t* w = weight + first * block_stride;
    const float* b = bias == nullptr ? nullptr : bias + first * LANES;
    uint16_t* o = out + first * LANES;
    switch (count) {
      case 0: all_rows<1>(rows, m, pairs, w, block_stride, n % LANES, b, o, n); break;
      case 1: all_rows<1>(rows, m, pairs, w, block_stride, LANES, b, o, n); break;
      case 2: all_rows<2>(rows, m, pairs, w, block_stride, LANES, b, o, n); break;
      case 3: all_rows<3>(rows, m, pairs, w, block_stride, LANES, b, o, n); break;
      default: all_rows<BLOCKS>(rows, m, pairs, w, block_stride, LANES, b, o, n);
    }
  });
}

// The bfloat16 product for CPUs with AMX: TDPBF16PS multiplies a tile of up to 16 rows by 32
// inputs (16 pairs) with a tile of 16 pairs of 16 columns, the pair layout above as it is, and
// adds each element's products to its running float32 sum, each row on its own (the rows of a
// tile share only the weight tile). An element's sum goes over the input tiles 0, 1, ... in
// turn, the hardware's order within a tile, whatever the number of rows, so a row gets the
// same bits in any tile; then the bias and one rounding (to_bf16). A tile of 16 rows costs the
// same instruction as one row, so a tree's tokens come nearly free where vdpbf16ps pays each
// row's multiply-adds, and one row reads the weight in one stream as above. (oneDNN's AMX
// product gives its one-row products another order than its many-row ones: eagle3.invariant's
// row limits.)
// Compilers that know AMX's instructions: GCC 11 and clang 12 on; with older ones AVX-512 BF16
// multiplies.
#if (defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11)
#define HAS_AMX 1
#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

// Tile registers: two blocks' sums, the rows' inputs, two blocks' weights. The inputs come 32
// (TILE_PAIRS pairs) a tile, so a weight whose inputs are not a multiple of 32 (none of the
// Llama and Qwen models') is multiplied by vdpbf16ps instead, which keeps its rows' bits too.
#define TMM_SUM0 0
#define TMM_SUM1 1
#define TMM_INPUTS 2
#define TMM_WEIGHTS0 3
#define TMM_WEIGHTS1 4
constexpr int64_t TILE_ROWS = 16, TILE_PAIRS = 16;

// ldtilecfg's 64 bytes (palette 1): each tile's rows and bytes a row.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes[16] = {};
  uint8_t rows[16] = {};
};

// Whether this CPU has AMX's bfloat16 tiles and Linux lets this process use them: a process
// asks once for the tiles' state (arch_prctl ARCH_REQ_XCOMP_PERM, as oneDNN does); without
// it a tile instruction faults.
bool amx_ready() {
  static const bool ready = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22)) || !(d & (1u << 24))) return false;
    constexpr long ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
  }();
  return ready;
}

// Tiles for `rows` rows and blocks of `width` columns.
AMX_TARGET void configure_tiles(int64_t rows, int64_t width) {
  TileConfig config;
  auto set = [&](int tile, int64_t r, int64_t bytes) {
    config.rows[tile] = static_cast<uint8_t>(r);
    config.bytes[tile] = static_cast<uint16_t>(bytes);
  };
  set(TMM_SUM0, rows, width * 4), set(TMM_SUM1, rows, width * 4), set(TMM_INPUTS, rows, TILE_PAIRS * 4);
  set(TMM_WEIGHTS0, TILE_PAIRS, width * 4), set(TMM_WEIGHTS1, TILE_PAIRS, width * 4);
  asm volatile("" ::"r"(&config) : "memory");  // ldtilecfg's asm names only the config's first word
  _tile_loadconfig(&config);
}

// R (configured) rows [R][pairs] as 32-bit words times B (1 or 2) blocks of `width` columns ->
// sums plus the bias, each rounded once to bfloat16 and stored to out.
template <int B>
AMX_TARGET void amx_tile(const uint32_t* rows, int64_t r, int64_t pairs, const uint16_t* weight, int64_t block_stride,
                         int64_t width, const float* bias, uint16_t* out, int64_t out_stride) {
  const int64_t row_bytes = pairs * 4, line = width * 4;
  const int64_t tile_words = TILE_PAIRS * width * 2;  // uint16s of a block's weight tile
  _tile_zero(TMM_SUM0);
  if (B == 2) _tile_zero(TMM_SUM1);
  for (int64_t t = 0; t < pairs / TILE_PAIRS; ++t) {
    _tile_loadd(TMM_INPUTS, rows + t * TILE_PAIRS, row_bytes);
    _tile_loadd(TMM_WEIGHTS0, weight + t * tile_words, line);
    _tile_dpbf16ps(TMM_SUM0, TMM_INPUTS, TMM_WEIGHTS0);
    if (B == 2) {
      _tile_loadd(TMM_WEIGHTS1, weight + block_stride + t * tile_words, line);
      _tile_dpbf16ps(TMM_SUM1, TMM_INPUTS, TMM_WEIGHTS1);
    }
  }
  alignas(64) float sums[B][TILE_ROWS][LANES];
  _tile_stored(TMM_SUM0, sums[0], LANES * 4);
  if (B == 2) _tile_stored(TMM_SUM1, sums[B - 1], LANES * 4);
  asm volatile("" ::: "memory");  // tilestored's asm does not say it writes sums
  const __mmask16 lanes = width == LANES ? 0xFFFF : static_cast<__mmask16>((1u << width) - 1);
  for (int64_t i = 0; i < r; ++i)
    for (int b = 0; b < B; ++b) {
      __m512 sum = _mm512_load_ps(sums[b][i]);
      if (bias != nullptr) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(lanes, bias + b * LANES));
      _mm256_mask_storeu_epi16(out + i * out_stride + b * LANES, lanes, to_bf16(sum));
    }
}

// Blocks [begin, end) of the weight, two at a time (the partial last block alone), each over
// the rows 16 at a time, on tiles configured here and released after (oneDNN's AMX kernels
// configure their own).
AMX_TARGET void amx_blocks(int64_t begin, int64_t end, const uint32_t* rows, int64_t m, int64_t pairs,
                           const uint16_t* weight, int64_t n, const float* bias, uint16_t* out) {
  const int64_t block_stride = pairs * LANES * 2;
  int64_t configured_rows = 0, configured_width = 0;
  in_groups(n, 2, begin, end, [&](int64_t first, int64_t count) {
    const int64_t width = count ? LANES : n % LANES;
    for (int64_t r = 0; r < m; r += TILE_ROWS) {
      const int64_t rows_here = std::min(TILE_ROWS, m - r);
      if (rows_here != configured_rows || width != configured_width)
        configure_tiles(rows_here, width), configured_rows = rows_here, configured_width = width;
      const uint16_t* w = weight + first * block_stride;
      const float* b = bias == nullptr ? nullptr : bias + first * LANES;
      uint16_t* o = out + r * n + first * LANES;
      if (count == 2) amx_tile<2>(rows + r * pairs, rows_here, pairs, w, block_stride, width, b, o, n);
      else amx_tile<1>(rows + r * pairs, rows_here, pairs, w, block_stride, width, b, o, n);
    }
  });
  if (configured_rows) _tile_release();
}

// The threads split the blocks evenly, each on tiles of its own.
void amx_multiply(const uint32_t* rows, int64_t m, int64_t pairs, const uint16_t* weight, int64_t n,
                  const float* bias, uint16_t* out) {
  over_block_ranges(n, [&](int64_t begin, int64_t end) { amx_blocks(begin, end, rows, m, pairs, weight, n, bias, out); });
}
#endif

// The products for CPUs with AVX2 and FMA, float32 and bfloat16: each output element is one
// float32 sum over k = 0, 1, ... in turn, a fused multiply-add each, then the bias (and, in
// bfloat16, one rounding to nearest even). A bfloat16 weight stays in the pair layout above,
// [N / 16][K / 2][16][2], and is widened in the registers: a lane's 32-bit word holds input
// 2q in its low half and 2q + 1 in its high half, and a bfloat16's bits are a float32's upper
// half, so a shift and a mask give the two float32 weights. The rows are widened to float32
// once a call. A float32 weight is one word a lane, [N / 16][K][16]. A block's sixteen
// columns are two 8-lane vectors, so a tile of R rows and B blocks keeps 2 * R * B running
// sums, at most 12 of AVX2's 16 registers.
#define FMA_TARGET __attribute__((target("avx2,fma")))

// Lanes [0, count) of an 8-lane mask (count clamped to 0..8).
FMA_TARGET inline __m256i first_lanes(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(count, 0, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Half `half` (8 lanes) of a block's 16 words at p: all of them (FULL), else the lanes of the
// mask `lanes`.
template <bool FULL>
FMA_TARGET inline __m256 load_half(const float* p, int half, __m256i lanes) {
  return FULL ? _mm256_loadu_ps(p + 8 * half) : _mm256_maskload_ps(p + 8 * half, lanes);
}

// The weights a word of each lane holds, as float32 lanes, input by input: a float32 word
// is one input's, a word of two bfloat16 is two inputs' (INPUTS), at(words, j) the j-th.
template <typename Word>
struct Widened;
template <>
struct Widened<float> {
  static constexpr int INPUTS = 1;
  FMA_TARGET static __m256 at(__m256 words, int) { return words; }
};
template <>
struct Widened<uint16_t> {
  static constexpr int INPUTS = 2;
  FMA_TARGET static __m256 at(__m256 words, int j) {
    const __m256i bits = _mm256_castps_si256(words);
    return _mm256_castsi256_ps(j == 0 ? _mm256_slli_epi32(bits, 16) : _mm256_and_si256(bits, _mm256_set1_epi32(-65536)));
  }
};

// float32 -> bfloat16 as c10::BFloat16 converts: to nearest even (denormals kept), a NaN to a
// quiet NaN; eight lanes -> eight halves.
FMA_TARGET inline __m128i to_bf16(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
  rounded = _mm256_blendv_epi8(_mm256_set1_epi32(0x7FC0), rounded, _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_ORD_Q)));
  // packus takes 128-bit lanes apart: [0..3, 0..3 | 4..7, 4..7]; the permute puts 4..7 after 0..3.
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(rounded, rounded), 0x08));
}

// Eight sums to `to` as float32 or bfloat16: all (FULL), else the first `count`.
template <bool FULL>
FMA_TARGET inline void store_half(float* to, __m256 sum, __m256i lanes, int64_t) {
  if (FULL) _mm256_storeu_ps(to, sum);
  else _mm256_maskstore_ps(to, lanes, sum);
}
template <bool FULL>
FMA_TARGET inline void store_half(uint16_t* to, __m256 sum, __m256i, int64_t count) {
  const __m128i halves = to_bf16(sum);
  if (FULL) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to), halves);
  } else {
    alignas(16) uint16_t kept[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(kept), halves);
    std::copy(kept, kept + std::clamp<int64_t>(count, 0, 8), to);
  }
}

// R float32 rows [R][K] times B blocks of Word (float32, or bfloat16 pairs) -> sums plus the
// bias, stored to out in Word's dtype. FULL: every block has sixteen columns; else one block
// of `width` columns (masked loads and stores).
template <int R, int B, bool FULL, typename Word>
FMA_TARGET void fma_tile(const float* rows, int64_t k_size, const Word* weight, int64_t block_stride, int64_t width,
                         const float* bias, Word* out, int64_t out_stride) {
  using W = Widened<Word>;
  const __m256i low = first_lanes(width), high = first_lanes(width - 8);
  const int64_t step = FULL ? LANES : width;  // words of a block for one word of inputs
  __m256 sums[R][B][2];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b) sums[r][b][0] = sums[r][b][1] = _mm256_setzero_ps();
  // Input by input, the block's weights first, then the rows, so that a row's input lives in
  // one register at a time (with more live, GCC spills a running sum, and its chain of
  // dependent multiply-adds waits on memory).
  for (int64_t q = 0; q < k_size / W::INPUTS; ++q)
#pragma GCC unroll 2
    for (int j = 0; j < W::INPUTS; ++j) {
      __m256 w[B][2];
#pragma GCC unroll 16
      for (int b = 0; b < B; ++b)
        for (int half = 0; half < 2; ++half)  // the block's 32-bit words, loaded as float32 lanes whatever they hold
          w[b][half] = W::at(load_half<FULL>(reinterpret_cast<const float*>(weight + b * block_stride) + q * step, half,
                                             half ? high : low), j);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const __m256 x = _mm256_broadcast_ss(rows + r * k_size + q * W::INPUTS + j);
#pragma GCC unroll 16
        for (int b = 0; b < B; ++b)
          sums[r][b][0] = _mm256_fmadd_ps(x, w[b][0], sums[r][b][0]), sums[r][b][1] = _mm256_fmadd_ps(x, w[b][1], sums[r][b][1]);
      }
    }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b)
      for (int half = 0; half < 2; ++half) {
        __m256 sum = sums[r][b][half];
        if (bias != nullptr) sum = _mm256_add_ps(sum, load_half<FULL>(bias + b * LANES, half, half ? high : low));
        store_half<FULL>(out + r * out_stride + b * LANES + 8 * half, sum, half ? high : low, width - 8 * half);
      }
}

// Every row times B blocks: one or two rows over up to four or two blocks at once (a
// product of one or two rows reads each block once, and fma_chunk gives more than one block
// to one or two rows only); three rows or more over one block, in_tiles. A row's sums are
// the same in any tile.
template <int B, bool FULL, typename Word>
FMA_TARGET void fma_rows(const float* rows, int64_t m, int64_t k_size, const Word* weight, int64_t block_stride,
                         int64_t width, const float* bias, Word* out, int64_t n) {
  auto tile_at = [&](auto size, int64_t r) {
    fma_tile<decltype(size)::value, B, FULL>(rows + r * k_size, k_size, weight, block_stride, width, bias,
                                             out + r * n, n);
  };
  if constexpr (B == 1)
    in_tiles(m, tile_at);
  else if (m == 1)
    tile_at(std::integral_constant<int, 1>{}, 0);
  else if constexpr (B == 2)
    tile_at(std::integral_constant<int, 2>{}, 0);
}

// Up to CHUNK_ROWS rows (below), over groups of as many blocks as the rows allow.
template <typename Word>
FMA_TARGET void fma_chunk(const float* rows, int64_t m, int64_t k_size, const Word* weight, int64_t n,
                          const float* bias, Word* out) {
  const int64_t block_stride = k_size * LANES;  // in Words: a block is k_size rows of LANES columns
  over_blocks(n, m == 1 ? 4 : m == 2 ? 2 : 1, [&](int64_t first, int64_t count) {
    const Word* w = weight + first * block_stride;
    const float* b = bias == nullptr ? nullptr : bias + first * LANES;
    Word* o = out + first * LANES;
    switch (count) {
      case 0: fma_rows<1, false>(rows, m, k_size, w, block_stride, n % LANES, b, o, n); break;
      case 1: fma_rows<1, true>(rows, m, k_size, w, block_stride, LANES, b, o, n); break;
      case 2: fma_rows<2, true>(rows, m, k_size, w, block_stride, LANES, b, o, n); break;
      case 3: fma_rows<3, true>(rows, m, k_size, w, block_stride, LANES, b, o, n); break;
      default: fma_rows<4, true>(rows, m, k_size, w, block_stride, LANES, b, o, n);
    }
  });
}

// Many rows (a prompt) go CHUNK_ROWS at a time, so that a chunk's rows stay in a core's
// cache while every block passes over them.
template <typename Word>
FMA_TARGET void fma_multiply(const float* rows, int64_t m, int64_t k_size, const Word* weight, int64_t n,
                             const float* bias, Word* out) {
  for (int64_t first = 0; first < m; first += CHUNK_ROWS)
    fma_chunk(rows + first * k_size, std::min(CHUNK_ROWS, m - first), k_size, weight, n, bias, out + first * n);
}

}  // namespace
#endif

// weight [N, K], bfloat16 with K even or float32 -> the packed weight in the block layouts
// above: [N, K / 2, 2] bfloat16 (a pair of inputs to a 32-bit lane) or [N, K, 1] float32.
// Either way the blocks move 32-bit words.
Tensor pack(const Tensor& weight) {
  const bool bf16 = weight.scalar_type() == at::kBFloat16;
  TORCH_CHECK(bf16 || weight.scalar_type() == at::kFloat, "pack: a bfloat16 or float32 weight, not ",
              weight.scalar_type());
  TORCH_CHECK(weight.dim() == 2 && (!bf16 || weight.size(1) % 2 == 0), "pack: a weight [N, K]",
              bf16 ? " with K even" : "", ", not ", weight.sizes());
  const int64_t n = weight.size(0), words = bf16 ? weight.size(1) / 2 : weight.size(1);
  const auto source = weight.contiguous();
  auto packed = at::empty({n, words, bf16 ? 2 : 1}, source.options());
  const auto* from = reinterpret_cast<const uint32_t*>(source.data_ptr());
  auto* to = reinterpret_cast<uint32_t*>(packed.data_ptr());
  for (int64_t first = 0; first < n; first += LANES) {
    const int64_t width = std::min(LANES, n - first);
    for (int64_t q = 0; q < words; ++q)
      for (int64_t c = 0; c < width; ++c) to[first * words + q * width + c] = from[(first + c) * words + q];
  }
  return packed;
}

namespace {
// The kernels above, one per instruction set.
enum class Kernel { NONE, FMA, DPBF16, AMX };

// The kernel that multiplies a bfloat16 (else float32) weight here, whose inputs come in
// `words` 32-bit words a row: AMX's tiles take bfloat16 weights of whole tiles of inputs,
// vdpbf16ps the other bfloat16 ones, fused multiply-adds the rest (and every weight on a CPU
// with AVX2 and FMA alone).
Kernel kernel_for(bool bf16, int64_t words) {
#ifdef HAS_AMX
  if (bf16 && words % TILE_PAIRS == 0 && amx_ready()) return Kernel::AMX;
#endif
#ifdef HAS_OWN_PRODUCT
  if (bf16 && __builtin_cpu_supports("avx512bf16")) return Kernel::DPBF16;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Kernel::FMA;
#endif
  return Kernel::NONE;
}
}  // namespace

// The instructions that multiply a bfloat16 (else float32) weight here, whose inputs are a
// multiple of 32 (every Llama and Qwen model's): "AMX", "AVX-512 BF16" or "AVX2" (fused
// multiply-adds), "" where there are none.
std::string product_instructions(bool bf16) {
  switch (kernel_for(bf16, 0)) {
    case Kernel::AMX: return "AMX";
    case Kernel::DPBF16: return "AVX-512 BF16";
    case Kernel::FMA: return "AVX2";
    default: return "";
  }
}

// rows [M, K] times the packed weight [N, K / 2, 2] or [N, K, 1], plus bias [N] (any float
// dtype) -> [M, N], in the weight's dtype, which the rows share.
Tensor product(const Tensor& rows, const Tensor& packed, const c10::optional<Tensor>& bias) {
#ifndef HAS_OWN_PRODUCT
  TORCH_CHECK(false, "product: built for x86-64 CPUs only");
  return Tensor();
#else
  const bool bf16 = packed.scalar_type() == at::kBFloat16;
  TORCH_CHECK(rows.dim() == 2 && packed.dim() == 3 && rows.size(1) == packed.size(1) * packed.size(2),
              "product: rows ", rows.sizes(), " for a packed weight ", packed.sizes());
  TORCH_CHECK(rows.scalar_type() == packed.scalar_type(), "product: ", rows.scalar_type(), " rows for a ",
              packed.scalar_type(), " weight");
  const Kernel kernel = kernel_for(bf16, packed.size(1));
  TORCH_CHECK(kernel != Kernel::NONE, "product: this CPU has neither AVX-512 BF16 nor AVX2 and FMA for a ",
              packed.scalar_type(), " weight");
  const auto x = rows.contiguous();
  const int64_t m = x.size(0), n = packed.size(0);
  auto out = at::empty({m, n}, x.options());
  Tensor b;
  if (bias.has_value() && bias->defined()) b = bias->to(at::kFloat).contiguous();
  const float* bias_data = b.defined() ? b.data_ptr<float>() : nullptr;
  const auto* pairs = reinterpret_cast<const uint32_t*>(x.data_ptr());  // bfloat16 rows as 32-bit words
  const auto* weight = reinterpret_cast<const uint16_t*>(packed.data_ptr());
  auto* halves = reinterpret_cast<uint16_t*>(out.data_ptr());
  if (!bf16) {
    fma_multiply(x.data_ptr<float>(), m, packed.size(1), packed.data_ptr<float>(), n, bias_data, out.data_ptr<float>());
  } else if (kernel == Kernel::FMA) {  // on the rows widened to float32 once
    fma_multiply(x.to(at::kFloat).data_ptr<float>(), m, rows.size(1), weight, n, bias_data, halves);
  } else if (kernel == Kernel::DPBF16) {
    multiply(pairs, m, packed.size(1), weight, n, bias_data, halves);
  } else {
#ifdef HAS_AMX
    amx_multiply(pairs, m, packed.size(1), weight, n, bias_data, halves);
#endif
  }
  return out;
#endif
}
