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

typedef float Floats8 __attribute__((vector_size(8 * sizeof(float))));
typedef float Floats4 __attribute__((vector_size(4 * sizeof(float))));

// The sixteen lanes added pairwise: lane l + 8 into lane l, then l + 4, l + 2, l + 1.
inline float lane_sum(Floats x) {
  const auto halves = bits_as<std::array<Floats8, 2>>(x);
  const auto quarters = bits_as<std::array<Floats4, 2>>(halves[0] + halves[1]);
  const Floats4 y = quarters[0] + quarters[1];
  return (y[0] + y[2]) + (y[1] + y[3]);
}

// lane_sum of sixteen vectors at once, the same additions in the same order, sixteen to a
// vector instruction: lane k of the result is lane_sum(x[k]).
inline Floats lane_sums(const Floats* x) {
  Floats eighths[8], quarters[4], halves[2];
  for (int k = 0; k < 8; ++k)  // lanes 0-7: x[2k]'s l + (l + 8); lanes 8-15: x[2k + 1]'s
    eighths[k] = __builtin_shufflevector(x[2 * k], x[2 * k + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                 __builtin_shufflevector(x[2 * k], x[2 * k + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  for (int k = 0; k < 4; ++k)  // four lanes for each of four vectors: l + (l + 4)
    quarters[k] = __builtin_shufflevector(eighths[2 * k], eighths[2 * k + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
                  __builtin_shufflevector(eighths[2 * k], eighths[2 * k + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  for (int k = 0; k < 2; ++k)  // two lanes for each of eight vectors: l + (l + 2)
    halves[k] = __builtin_shufflevector(quarters[2 * k], quarters[2 * k + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
                __builtin_shufflevector(quarters[2 * k], quarters[2 * k + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  return __builtin_shufflevector(halves[0], halves[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
         __builtin_shufflevector(halves[0], halves[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

// The query heads that share one key head, at one query position: they keep the same keys
// (kept: their indices in cache order, n of them), and each key is read once for all of them,
// a block of keys at a time. Each head's arithmetic is its own: q_rows[h], out_rows[h] [D].
// CHUNKS: D / 16 where the compiler is to keep a row in registers, else 0 (any D).
// Scratch, allocated once per share of positions: scores [heads * ceil(n / 16)], sums [heads * SETS *
// MAX_CHUNKS], denominators [heads].
constexpr int64_t SETS = 4, MAX_CHUNKS = 16, BLOCK = 64;

template <int64_t CHUNKS>
void attend_position(const float* const* q_rows, float* const* out_rows, int64_t heads, float scale,
                     const float* k_head, int64_t k_stride, const float* v_head, int64_t v_stride,
                     const int64_t* kept, int64_t n, int64_t d, Floats* scores, Floats* sums,
                     float* denominators) {
  const int64_t chunks = CHUNKS ? CHUNKS : (d + LANES - 1) / LANES, vectors = (n + LANES - 1) / LANES;
  auto width = [d](int64_t part) { return CHUNKS ? LANES : std::min(LANES, d - part * LANES); };
  // Each head's scores of the kept keys, in the order they are kept: score c in lane c % 16
  // of its scores[c / 16].
  for (int64_t start = 0; start < n; start += BLOCK) {
    for (int64_t h = 0; h < heads; ++h) {
      Floats scaled_query[CHUNKS ? CHUNKS : MAX_CHUNKS];
      for (int64_t part = 0; part < chunks; ++part)
        scaled_query[part] = load(q_rows[h] + part * LANES, width(part)) * scale;
      auto products = [&](int64_t c) {
        const float* k_row = k_head + kept[c] * k_stride;
        Floats sum = scaled_query[0] * load(k_row, width(0));
        for (int64_t part = 1; part < chunks; ++part) sum += scaled_query[part] * load(k_row + part * LANES, width(part));
        return sum;
      };
      for (int64_t c = start; c < std::min(n, start + BLOCK); c += LANES) {  // BLOCK is a multiple of 16
        Floats of_keys[LANES];
        if (c + LANES <= n)
          for (int64_t l = 0; l < LANES; ++l) of_keys[l] = products(c + l);
        else
          for (int64_t l = 0; l < LANES; ++l) of_keys[l] = c + l < n ? products(c + l) : Floats{};
        scores[h * vectors + c / LANES] = lane_sums(of_keys);
      }
    }
  }
  // Softmax weights, unnormalised, in place of the scores; the denominators apart.
  for (int64_t h = 0; h < heads; ++h) {
    Floats* row = scores + h * vectors;
    float* score = reinterpret_cast<float*>(row);
    for (int64_t c = n; c < vectors * LANES; ++c) score[c] = score[0];  // lanes past the last kept key: no new maximum
    Floats highest = row[0];
    for (int64_t v = 1; v < vectors; ++v) highest = highest > row[v] ? highest : row[v];
    float top = highest[0];
    for (int64_t l = 1; l < LANES; ++l) top = std::max(top, highest[l]);
    Floats total = {};
    for (int64_t v = 0; v < vectors; ++v) {
      Floats e = exp_nonpositive(row[v] - top);
      for (int64_t l = n - v * LANES; l < LANES; ++l) e[l] = 0.0f;  // lanes past the last kept key
      row[v] = e;
      total += e;
    }
    denominators[h] = lane_sum(total);
  }
  // The weighted values in SETS running sums per head, key c into sum c % SETS (independent
  // chains of additions, which a CPU overlaps), then combined pairwise.
  std::fill(sums, sums + heads * SETS * MAX_CHUNKS, Floats{});
  for (int64_t start = 0; start < n; start += BLOCK) {
    for (int64_t h = 0; h < heads; ++h) {
      Floats sum[SETS][CHUNKS ? CHUNKS : MAX_CHUNKS];
      Floats* saved = sums + h * SETS * MAX_CHUNKS;
      for (int64_t set = 0; set < SETS; ++set)
        for (int64_t part = 0; part < chunks; ++part) sum[set][part] = saved[set * MAX_CHUNKS + part];
      const float* weights = reinterpret_cast<const float*>(scores + h * vectors);
      auto add_value = [&](int64_t c, int64_t set) {
        const float* v_row = v_head + kept[c] * v_stride;
        for (int64_t part = 0; part < chunks; ++part)
          sum[set][part] += weights[c] * load(v_row + part * LANES, width(part));
      };
      const int64_t end = std::min(n, start + BLOCK);  // BLOCK is a multiple of SETS
      int64_t c = start;
      for (; c + SETS <= end; c += SETS)
        for (int64_t set = 0; set < SETS; ++set) add_value(c + set, set);
      for (; c < end; ++c) add_value(c, c % SETS);
      for (int64_t set = 0; set < SETS; ++set)
        for (int64_t part = 0; part < chunks; ++part) saved[set * MAX_CHUNKS + part] = sum[set][part];
    }
  }
  for (int64_t h = 0; h < heads; ++h) {
    Floats* sum = sums + h * SETS * MAX_CHUNKS;
    for (int64_t half = SETS / 2; half > 0; half /= 2)
      for (int64_t set = 0; set < half; ++set)
        for (int64_t part = 0; part < chunks; ++part) sum[set * MAX_CHUNKS + part] += sum[(set + half) * MAX_CHUNKS + part];
    for (int64_t e = 0; e < d; ++e) out_rows[h][e] = sum[e / LANES][e % LANES] / denominators[h];
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
    std::vector<Floats> scores(group * ((length + LANES - 1) / LANES)), sums(group * SETS * MAX_CHUNKS);
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
