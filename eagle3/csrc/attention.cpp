// Attention whose every query row gets the same bits however it is batched: in a one-token
// step, as one node of a verified tree, or as one row of a batch of sequences.
//
// A row's result depends only on its own query and on the keys and values it attends to, in
// cache order: the masked-out keys are skipped, not added as zeros, and every sum runs over the
// kept keys in a fixed order (float32, sixteen partial sums by position among the kept keys,
// combined pairwise), never over lanes that depend on where a key sits in the cache or on how
// many rows the call has. A tree node's ancestors are stored in depth order, so the node sees
// the keys of its one-token step in the same order and gets its bits by construction.
//
//   query [B, heads, q, D], key / value [B, kv_heads, L, D] (grouped-query heads; float32
//   keys and values are read as they are, other dtypes converted first, so the decoders'
//   cache stores float32), mask: none (every key), bool [B or 1, 1, q, >= L], true where a
//   key is kept (eagle3.masks), or additive, 0 where a key is kept (the masks transformers
//   builds for causal Llama-family layers are 0 or the dtype's minimum) -> [B, q, heads, D]
//   in the query's dtype; a row that keeps no key gets zeros.

#include <torch/extension.h>

#include <ATen/Parallel.h>

#include "lanes.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

using at::Tensor;

namespace {

typedef float Floats4 __attribute__((vector_size(4 * sizeof(float))));

// The sixteen lanes added pairwise: lane l + 8 into lane l, then l + 4, l + 2, l + 1.
inline float lane_sum(Floats x) {
  const auto halves = bits_as<std::array<Floats8, 2>>(x);
  const auto quarters = bits_as<std::array<Floats4, 2>>(halves[0] + halves[1]);
  const Floats4 y = quarters[0] + quarters[1];
  return (y[0] + y[2]) + (y[1] + y[3]);
}

// lane_sum for many vectors at once, the same additions in the same order, eight results to
// a vector. The vectors come as their halves' sums e = low + high (lane_sum's first
// addition): e[m] + e[m + 4], then the pairs (0, 2) and (1, 3) of what is left, then (0, 1).
// Each step adds two vectors' worth of lanes in one instruction, with shuffles that stay
// within 128-bit lanes, so eight-lane registers (AVX2) do it as well as wider ones.

// Two vectors' e -> [a0+a4, a1+a5, a2+a6, a3+a7, b0+b4, ..., b3+b7].
inline Floats8 fours(Floats8 a, Floats8 b) {
  return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11) + __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15);
}

// fours of vectors a, b and of c, d -> each one's (0 + 2, 1 + 3): [a, a, c, c, b, b, d, d].
inline Floats8 twos(Floats8 ab, Floats8 cd) {
  return __builtin_shufflevector(ab, cd, 0, 1, 8, 9, 4, 5, 12, 13) + __builtin_shufflevector(ab, cd, 2, 3, 10, 11, 6, 7, 14, 15);
}

// twos of vectors 0-3 and of 4-7 -> each one's last addition, in the vectors' order.
inline Floats8 ones(Floats8 low, Floats8 high) {
  const Floats8 sums = __builtin_shufflevector(low, high, 0, 2, 8, 10, 4, 6, 12, 14) +
                       __builtin_shufflevector(low, high, 1, 3, 9, 11, 5, 7, 13, 15);  // [0, 2, 4, 6, 1, 3, 5, 7]
  return __builtin_shufflevector(sums, sums, 0, 4, 1, 5, 2, 6, 3, 7);
}

// The query heads that share one key head, at one query position: they keep the same keys
// (kept: their indices in cache order, n of them), and each key is read once for all of them,
// a block of keys at a time. Each head's arithmetic is its own: q_rows[h], out_rows[h] [D].
// CHUNKS: D / 16 where the compiler is to keep a row in registers, else 0 (any D).
// Scratch, allocated once per share of positions: scores [heads * 16 * ceil(n / 16)], sums
// [heads * SETS * MAX_CHUNKS], denominators [heads].
constexpr int64_t SETS = 4, MAX_CHUNKS = 16, BLOCK = 64;

template <int64_t CHUNKS>
void attend_position(const float* const* q_rows, float* const* out_rows, int64_t heads, float scale,
                     const float* k_head, int64_t k_stride, const float* v_head, int64_t v_stride,
                     const int64_t* kept, int64_t n, int64_t d, float* scores, Floats* sums,
                     float* denominators) {
  const int64_t chunks = CHUNKS ? CHUNKS : (d + LANES - 1) / LANES, padded = (n + LANES - 1) / LANES * LANES;
  auto width = [d](int64_t part) { return CHUNKS ? LANES : std::min(LANES, d - part * LANES); };
  // Each head's scores of the kept keys, in the order they are kept (score c at
  // scores[h * padded + c]): per key sixteen lanes of products, lane l summing dimensions
  // l, l + 16, ... in turn, then the lanes by lane_sum, sixteen keys at a time.
  for (int64_t start = 0; start < n; start += BLOCK) {
    for (int64_t h = 0; h < heads; ++h) {
      Vector scaled_query[PIECES * (CHUNKS ? CHUNKS : MAX_CHUNKS)];  // each sixteen dimensions as PIECES
      for (int64_t piece = 0; piece < PIECES * chunks; ++piece)
        scaled_query[piece] =
            load_part<Vector>(q_rows[h] + piece * WIDTH, width(piece / PIECES) - piece % PIECES * WIDTH) * scale;
      auto halves_sum = [&](int64_t c) {  // key c's sixteen lanes of products, lanes 0-7 + lanes 8-15
        if (c >= n) return Floats8{};
        const float* k_row = k_head + kept[c] * k_stride;
        std::array<Vector, PIECES> sum;
        for (int64_t piece = 0; piece < PIECES; ++piece)
          sum[piece] = scaled_query[piece] * load_part<Vector>(k_row + piece * WIDTH, width(0) - piece * WIDTH);
        for (int64_t part = 1; part < chunks; ++part)
          for (int64_t piece = 0; piece < PIECES; ++piece)
            sum[piece] += scaled_query[part * PIECES + piece] *
                          load_part<Vector>(k_row + part * LANES + piece * WIDTH, width(part) - piece * WIDTH);
        const auto halves = bits_as<std::array<Floats8, 2>>(sum);
        return halves[0] + halves[1];
      };
      auto four = [&](int64_t c) {  // keys c .. c + 3, two lanes each
        return twos(fours(halves_sum(c), halves_sum(c + 1)), fours(halves_sum(c + 2), halves_sum(c + 3)));
      };
      float* score = scores + h * padded;
      for (int64_t c = start; c < std::min(n, start + BLOCK); c += 8) {  // BLOCK is a multiple of 8
        const Floats8 eight = ones(four(c), four(c + 4));
        std::memcpy(score + c, &eight, sizeof eight);
      }
    }
  }
  // Softmax weights, unnormalised, in place of the scores; the denominators apart. Eight
  // lanes at a time, the running maximum and total as the low and high halves of sixteen.
  const Ints8 lane = lane_numbers<Ints8>();
  for (int64_t h = 0; h < heads; ++h) {
    float* score = scores + h * padded;
    for (int64_t c = n; c < padded; ++c) score[c] = score[0];  // lanes past the last kept key: no new maximum
    std::array<Floats8, 2> highest = {load_part<Floats8>(score, 8), load_part<Floats8>(score + 8, 8)};
    for (int64_t c = LANES; c < padded; c += 8) {
      Floats8& most = highest[c / 8 % 2];
      const Floats8 x = load_part<Floats8>(score + c, 8);
      most = most > x ? most : x;
    }
    float top = highest[0][0];
    for (int64_t l = 1; l < LANES; ++l) top = std::max(top, highest[l / 8][l % 8]);
    std::array<Floats8, 2> total = {};
    for (int64_t c = 0; c < padded; c += 8) {
      Floats8 e = exp_nonpositive(load_part<Floats8>(score + c, 8) - top);
      e = lane < static_cast<int32_t>(n - c) ? e : Floats8{};  // lanes past the last kept key
      std::memcpy(score + c, &e, sizeof e);
      total[c / 8 % 2] += e;
    }
    denominators[h] = lane_sum(bits_as<Floats>(total));
  }
  // The weighted values in SETS running sums per head, key c into sum c % SETS (independent
  // chains of additions, which a CPU overlaps), then combined pairwise. Each sixteen
  // dimensions go through the block on their own, so that the SETS sums stay in registers.
  std::fill(sums, sums + heads * SETS * MAX_CHUNKS, Floats{});
  for (int64_t start = 0; start < n; start += BLOCK) {
    const int64_t end = std::min(n, start + BLOCK);  // BLOCK is a multiple of SETS
    for (int64_t h = 0; h < heads; ++h) {
      const float* weights = scores + h * padded;
      for (int64_t part = 0; part < chunks; ++part) {
        Floats* saved = sums + h * SETS * MAX_CHUNKS + part;
        std::array<Vector, PIECES> sum[SETS];
        for (int64_t set = 0; set < SETS; ++set) sum[set] = bits_as<std::array<Vector, PIECES>>(saved[set * MAX_CHUNKS]);
        auto add_value = [&](int64_t c, int64_t set) {
          const float* v_row = v_head + kept[c] * v_stride + part * LANES;
          for (int64_t piece = 0; piece < PIECES; ++piece)
            sum[set][piece] += weights[c] * load_part<Vector>(v_row + piece * WIDTH, width(part) - piece * WIDTH);
        };
        int64_t c = start;
        for (; c + SETS <= end; c += SETS)
          for (int64_t set = 0; set < SETS; ++set) add_value(c + set, set);
        for (; c < end; ++c) add_value(c, c % SETS);
        for (int64_t set = 0; set < SETS; ++set) saved[set * MAX_CHUNKS] = bits_as<Floats>(sum[set]);
      }
    }
  }
  for (int64_t h = 0; h < heads; ++h) {
    Floats* sum = sums + h * SETS * MAX_CHUNKS;
    for (int64_t part = 0; part < chunks; ++part) {
      for (int64_t half = SETS / 2; half > 0; half /= 2)
        for (int64_t set = 0; set < half; ++set) sum[set * MAX_CHUNKS + part] += sum[(set + half) * MAX_CHUNKS + part];
      const Floats out = sum[part] / denominators[h];
      std::memcpy(out_rows[h] + part * LANES, &out, width(part) * sizeof(float));
    }
  }
}

// query [B, heads, q, D], key / value [B, kv_heads, L, D], all float32 with unit stride in D;
// keep [B or 1, 1, q, L] bool or undefined -> out [B, q, heads, D] float32, contiguous.
void attend_rows(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& keep, double scaling,
                 Tensor& out) {
  const int64_t b = query.size(0), heads = query.size(1), q = query.size(2), d = query.size(3);
  const int64_t kv_heads = key.size(1), length = key.size(2), group = heads / kv_heads;
  const float *q_data = query.data_ptr<float>(), *k_data = key.data_ptr<float>(), *v_data = value.data_ptr<float>();
  const bool* keep_data = keep.defined() ? keep.data_ptr<bool>() : nullptr;
  float* out_data = out.data_ptr<float>();
  const auto qs = query.strides(), ks = key.strides(), vs = value.strides();
  const int64_t keep_batch = keep.defined() && keep.size(0) > 1 ? keep.stride(0) : 0;
  const int64_t keep_row = keep.defined() ? keep.stride(2) : 0, keep_key = keep.defined() ? keep.stride(3) : 0;
  const auto kernel = d == 64 ? attend_position<4> : d == 128 ? attend_position<8> : attend_position<0>;
  // Positions (a key head's query heads at one query) run in parallel where a share of them
  // is worth waking a thread for.
  const int64_t grain = std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, group * length * d));
  at::parallel_for(0, b * kv_heads * q, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(group * ((length + LANES - 1) / LANES * LANES));
    std::vector<Floats> sums(group * SETS * MAX_CHUNKS);
    std::vector<float> denominators(group);
    std::vector<int64_t> kept(length);
    std::vector<const float*> q_rows(group);
    std::vector<float*> out_rows(group);
    for (int64_t position = begin; position < end; ++position) {
      const int64_t i = position % q, g = position / q % kv_heads, batch = position / q / kv_heads;
      int64_t n = 0;
      for (int64_t j = 0; j < length; ++j)
        if (!keep_data || keep_data[batch * keep_batch + i * keep_row + j * keep_key]) kept[n++] = j;
      for (int64_t member = 0; member < group; ++member) {
        const int64_t h = g * group + member;
        q_rows[member] = q_data + batch * qs[0] + h * qs[1] + i * qs[2];
        out_rows[member] = out_data + ((batch * q + i) * heads + h) * d;
        if (n == 0) std::fill(out_rows[member], out_rows[member] + d, 0.0f);
      }
      if (n > 0)
        kernel(q_rows.data(), out_rows.data(), group, static_cast<float>(scaling), k_data + batch * ks[0] + g * ks[1],
               ks[2], v_data + batch * vs[0] + g * vs[1], vs[2], kept.data(), n, d, scores.data(), sums.data(),
               denominators.data());
    }
  });
}

// float32, with unit stride in the last dimension (a copy only where needed).
Tensor as_float_rows(const Tensor& x) {
  const auto y = x.to(at::kFloat);
  return y.stride(-1) == 1 ? y : y.contiguous();
}

}  // namespace

Tensor exact_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                       const c10::optional<Tensor>& mask, double scaling) {
  TORCH_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4, "attention: query, key and value must be 4-D");
  TORCH_CHECK(query.size(1) % key.size(1) == 0, "attention: ", query.size(1), " query heads for ", key.size(1),
              " key heads");
  TORCH_CHECK(query.size(3) <= MAX_CHUNKS * LANES, "attention: head dimension ", query.size(3), " is over ",
              MAX_CHUNKS * LANES);
  Tensor keep;  // [B or 1, 1, q, L] bool
  if (mask.has_value() && mask->defined()) {
    keep = mask->slice(-1, 0, key.size(2));
    if (keep.scalar_type() != at::kBool) keep = keep.eq(0);  // an additive mask
    TORCH_CHECK(keep.dim() == 4 && keep.size(2) == query.size(2) && keep.size(3) == key.size(2),
                "attention: a mask of shape ", mask->sizes(), " for ", query.size(2), " queries and ", key.size(2),
                " keys");
  }
  auto out = at::empty({query.size(0), query.size(2), query.size(1), query.size(3)}, query.options().dtype(at::kFloat));
  attend_rows(as_float_rows(query), as_float_rows(key), as_float_rows(value), keep, scaling, out);
  return out.to(query.scalar_type());
}
