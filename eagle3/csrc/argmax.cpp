// The greedy verdict: the index of each row's largest logit, as torch.argmax gives it (the
// first of equal largest values; the first NaN where a row has one), in one vectorised pass
// a row. ATen's reduction takes some tens of microseconds over a 49,152-word row, a
// cost every decoding step and every verified tree node pays.
//   logits [..., V] float32 -> [...] int64

#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "lanes.h"

using at::Tensor;

namespace {

int64_t first_nan(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(x[i])) return i;
  return -1;
}

// Lane l of a vector of W lanes (W = WIDTH, the build's widest) keeps the largest of x[l],
// x[l + W], ... and the first index it was seen at; a NaN is never larger, so any NaN is looked
// for apart. The index found is the same whatever W.
int64_t row_argmax(const float* x, int64_t n) {
  int64_t index = 0, i = 0;
  float best = x[0];
  if (n >= WIDTH) {
    Vector top = load_part<Vector>(x, WIDTH);
    VectorInts where = lane_numbers<VectorInts>(), lane = where;
    VectorInts nan = top != top;
    for (i = WIDTH; i + WIDTH <= n; i += WIDTH) {
      const Vector v = load_part<Vector>(x + i, WIDTH);
      lane += static_cast<int32_t>(WIDTH);
      const VectorInts larger = v > top;
      top = larger ? v : top;
      where = larger ? lane : where;
      nan |= v != v;
    }
    for (int64_t l = 0; l < WIDTH; ++l)
      if (nan[l]) return first_nan(x, n);
    best = top[0], index = where[0];
    for (int64_t l = 1; l < WIDTH; ++l)
      if (top[l] > best || (top[l] == best && where[l] < index)) best = top[l], index = where[l];
  }
  for (; i < n; ++i) {  // the last n % WIDTH values, or all of fewer than WIDTH
    if (std::isnan(x[i])) return first_nan(x, n);
    if (x[i] > best) best = x[i], index = i;
  }
  return index;
}

}  // namespace

Tensor last_argmax(const Tensor& logits) {
  TORCH_CHECK(logits.dim() >= 1 && logits.size(-1) > 0 && logits.scalar_type() == at::kFloat,
              "argmax: float32 logits [..., V] with V > 0, not ", logits.scalar_type(), " ", logits.sizes());
  const auto x = logits.contiguous();
  const int64_t n = x.size(-1), rows = x.numel() / n;
  auto shape = x.sizes().vec();
  shape.pop_back();
  auto out = at::empty(shape, x.options().dtype(at::kLong));
  const float* data = x.data_ptr<float>();
  int64_t* index = out.data_ptr<int64_t>();
  at::parallel_for(0, rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) index[row] = row_argmax(data + row * n, n);
  });
  return out;
}
