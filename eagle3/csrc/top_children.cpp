// A draft level's choice (eagle3.tree.top_children): each frontier node's top_k children by
// log-probability, scored by their path, and the best top_k of all those children, the next
// frontier. In ATen it is seven ops a level, the largest a top-k over the draft vocabulary
// that costs tens of microseconds for a few rows; here it is one pass for each row's largest
// logits and one for its normaliser, both vectorised (lanes.h, the attention's
// exponential).
//   logits [B, n, V] float32 or bfloat16, scores [B, n] float32 (the nodes' own), d2t [V]
//   int64 (draft id -> target id offset), top_k ->
//   tokens [B, n * top_k] int64 (target ids; node i's children at i * top_k ..., best first),
//   child_scores [B, n * top_k] float32 (score + log-probability), best [B, top_k] int64
//   (indices into the children, best first), and the best children's scores and tokens
//   [B, top_k]. Among equal values the lower index comes first.

#include <torch/extension.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "lanes.h"

using at::Tensor;

namespace {

typedef uint32_t Words __attribute__((vector_size(WIDTH * sizeof(uint32_t))));
typedef uint16_t Halves __attribute__((vector_size(WIDTH * sizeof(uint16_t))));

// A Vector of a row's values as float32 (a bfloat16's bits are a float32's upper half).
inline Vector load(const float* x) { return load_part<Vector>(x, WIDTH); }
inline Vector load(const at::BFloat16* x) {
  Halves h;
  std::memcpy(&h, x, sizeof h);
  return bits_as<Vector>(__builtin_convertvector(h, Words) << 16);
}
inline float value(const float* x, int64_t i) { return x[i]; }
inline float value(const at::BFloat16* x, int64_t i) { return static_cast<float>(x[i]); }

// The k largest values (value descending, index ascending among equals) kept sorted.
struct Best {
  std::vector<float> values;
  std::vector<int64_t> indices;
  int64_t k;
  explicit Best(int64_t k) : k(k) { values.reserve(k + 1), indices.reserve(k + 1); }
  float threshold() const {  // what a value must beat to enter
    return static_cast<int64_t>(values.size()) < k ? -std::numeric_limits<float>::infinity() : values.back();
  }
  void offer(float v, int64_t index) {  // indices come in ascending order
    if (static_cast<int64_t>(values.size()) == k && !(v > values.back())) return;
    int64_t at = values.size();
    while (at > 0 && v > values[at - 1]) --at;
    values.insert(values.begin() + at, v), indices.insert(indices.begin() + at, index);
    if (static_cast<int64_t>(values.size()) > k) values.pop_back(), indices.pop_back();
  }
};

// One row of V logits: its k largest as log-probabilities plus `score`, and their ids.
template <typename T>
void row_children(const T* x, int64_t n, int64_t k, float score, float* child_scores, int64_t* ids) {
  Best best(k);
  int64_t i = 0;
  float largest = -std::numeric_limits<float>::infinity();
  for (; i < std::min(n, k); ++i) best.offer(value(x, i), i), largest = std::max(largest, value(x, i));
  Vector top = Vector{} + largest;
  for (; i + WIDTH <= n; i += WIDTH) {
    const Vector v = load(x + i);
    top = v > top ? v : top;
    const VectorInts over = v > best.threshold();
    bool any = false;
    for (int64_t l = 0; l < WIDTH; ++l) any |= over[l] != 0;
    if (any)
      for (int64_t l = 0; l < WIDTH; ++l)
        if (over[l]) best.offer(v[l], i + l);
  }
  for (int64_t l = 0; l < WIDTH; ++l) largest = std::max(largest, top[l]);
  for (; i < n; ++i) best.offer(value(x, i), i), largest = std::max(largest, value(x, i));
  // The normaliser's sum in sixteen lanes, lane l over j = l, l + 16, ..., then the lanes in turn.
  std::array<Vector, PIECES> sums{};
  int64_t j = 0;
  for (; j + LANES <= n; j += LANES)
    for (int64_t piece = 0; piece < PIECES; ++piece) sums[piece] += exp_nonpositive(load(x + j + piece * WIDTH) - largest);
  const auto lanes = bits_as<std::array<float, LANES>>(sums);
  float sum = 0.0f;
  for (int64_t l = 0; l < LANES; ++l) sum += lanes[l];
  for (; j < n; ++j) sum += std::exp(value(x, j) - largest);
  const float normaliser = largest + std::log(sum);
  for (int64_t c = 0; c < k; ++c) child_scores[c] = score + (best.values[c] - normaliser), ids[c] = best.indices[c];
}

}  // namespace

std::vector<Tensor> top_children(const Tensor& logits, const Tensor& scores, const Tensor& d2t, int64_t top_k) {
  TORCH_CHECK(logits.dim() == 3 && (logits.scalar_type() == at::kFloat || logits.scalar_type() == at::kBFloat16),
              "top_children: float32 or bfloat16 logits [B, n, V], not ", logits.scalar_type(), " ", logits.sizes());
  const int64_t b = logits.size(0), n = logits.size(1), v = logits.size(2), k = top_k;
  TORCH_CHECK(k >= 1 && k <= v, "top_children: top_k ", k, " for a vocabulary of ", v);
  TORCH_CHECK(scores.scalar_type() == at::kFloat && scores.sizes() == at::IntArrayRef({b, n}),
              "top_children: float32 scores [", b, ", ", n, "], not ", scores.scalar_type(), " ", scores.sizes());
  TORCH_CHECK(d2t.scalar_type() == at::kLong && d2t.dim() == 1 && d2t.size(0) == v,
              "top_children: int64 d2t [", v, "], not ", d2t.scalar_type(), " ", d2t.sizes());
  const auto x = logits.contiguous(), s = scores.contiguous(), offsets = d2t.contiguous();
  auto tokens = at::empty({b, n * k}, logits.options().dtype(at::kLong));
  auto child_scores = at::empty({b, n * k}, logits.options().dtype(at::kFloat));
  auto best = at::empty({b, k}, logits.options().dtype(at::kLong));
  auto best_scores = at::empty({b, k}, logits.options().dtype(at::kFloat));
  auto best_tokens = at::empty({b, k}, logits.options().dtype(at::kLong));
  int64_t* token = tokens.data_ptr<int64_t>();
  float* child = child_scores.data_ptr<float>();
  const float* score = s.data_ptr<float>();
  for (int64_t row = 0; row < b * n; ++row) {
    if (x.scalar_type() == at::kFloat)
      row_children(x.data_ptr<float>() + row * v, v, k, score[row], child + row * k, token + row * k);
    else
      row_children(x.data_ptr<at::BFloat16>() + row * v, v, k, score[row], child + row * k, token + row * k);
  }
  const int64_t* offset = offsets.data_ptr<int64_t>();
  for (int64_t i = 0; i < b * n * k; ++i) token[i] += offset[token[i]];
  int64_t *best_index = best.data_ptr<int64_t>(), *best_token = best_tokens.data_ptr<int64_t>();
  float* best_score = best_scores.data_ptr<float>();
  for (int64_t batch = 0; batch < b; ++batch) {
    Best kept(k);
    for (int64_t c = 0; c < n * k; ++c) kept.offer(child[batch * n * k + c], c);
    for (int64_t c = 0; c < k; ++c) {
      best_index[batch * k + c] = kept.indices[c];
      best_score[batch * k + c] = kept.values[c];
      best_token[batch * k + c] = token[batch * n * k + kept.indices[c]];
    }
  }
  return {tokens, child_scores, best, best_scores, best_tokens};
}
