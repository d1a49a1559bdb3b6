// eagle3.decoder_layer's lean forward in C++: the same arithmetic in the same order on the
// same prepacked oneDNN weights, so the same bits, without Python between the ops (on a small
// target's one-token step a large share of its time). In bfloat16 the norms and the rotation
// are loops that round where the ATen ops they replace round (their one reduction, the norm's
// mean, is still ATen's), so a layer dispatches fewer ops.
//
// A layer is two calls, so that any transformers cache (eagle3.kv_cache's, a batch's, none)
// stores the keys and values in between:
//   attention_inputs: hidden [B, n, hidden] -> query [B, heads, n, D], key and value
//                     [B, kv_heads, n, D] (normed, projected, q/k normed where the family
//                     does, rotated);
//   layer_output:     hidden, query and the cached keys and values [B, kv_heads, L, D] ->
//                     the layer's output [B, n, hidden] (attention.cpp's attention, o, the MLP).
// The EAGLE-3 head's one layer is the same two calls, its first being draft_attention_inputs
// (its q/k/v read the normed token embeddings beside the normed draft states); rms_norm
// serves its output norm.
// Each product is eagle3.invariant.by_rows over a packed weight, within its row limits: one
// that product.cpp packed (bfloat16 and float32 with AVX2 and FMA;
// eagle3.native.own_products) or one torch.ops.mkldnn._reorder_linear_weight packed for oneDNN.

#include <torch/extension.h>

#include <ATen/core/dispatch/Dispatcher.h>

using at::Tensor;
using OptionalTensor = c10::optional<Tensor>;

Tensor pack(const Tensor& weight);  // product.cpp
Tensor product(const Tensor& rows, const Tensor& packed, const OptionalTensor& bias);
std::string product_instructions(bool bf16);

namespace {

// A product on a packed weight: product.cpp's where it packed it ([N, K / 2, 2] or [N, K, 1]), else
// torch.ops.mkldnn._linear_pointwise(rows, packed, bias, "none", [], "") on oneDNN's.
Tensor packed_product(const Tensor& rows, const Tensor& packed, const OptionalTensor& bias) {
  if (packed.dim() == 3) return product(rows, packed, bias);
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("mkldnn::_linear_pointwise", "");
  std::vector<c10::IValue> stack{rows, packed, bias, std::string("none"), c10::List<c10::optional<at::Scalar>>(),
                                 std::string("")};
  op.callBoxed(&stack);
  return stack[0].toTensor();
}

// eagle3.invariant.padded_product
Tensor padded_product(const Tensor& rows, const Tensor& packed, const OptionalTensor& bias, int64_t min_rows) {
  if (rows.size(0) >= min_rows) return packed_product(rows, packed, bias);
  const auto padding = rows.new_zeros({min_rows - rows.size(0), rows.size(1)});
  return packed_product(at::cat({rows, padding}), packed, bias).slice(0, 0, rows.size(0));
}

// eagle3.invariant.by_rows: x [..., in] -> [..., out], at most max_rows rows a product (0: any).
Tensor by_rows(const Tensor& x, const Tensor& packed, const OptionalTensor& bias, int64_t min_rows, int64_t max_rows) {
  const auto rows = x.reshape({-1, x.size(-1)});
  Tensor out;
  if (max_rows > 0 && rows.size(0) > max_rows) {
    std::vector<Tensor> parts;
    for (const auto& chunk : rows.split(max_rows)) parts.push_back(padded_product(chunk, packed, bias, min_rows));
    out = at::cat(parts);
  } else {
    out = padded_product(rows, packed, bias, min_rows);
  }
  auto shape = x.sizes().vec();
  shape.back() = out.size(-1);
  return out.view(shape);
}

// eagle3.decoder_layer.rms_norm: float32 statistics, rounded to the input dtype before the
// weight. hidden [..., D], weight [D].
Tensor rms_norm_ops(const Tensor& hidden, const Tensor& weight, double eps) {
  auto x = hidden.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
  const auto scale = x.square().mean(-1, /*keepdim=*/true).add_(eps).rsqrt_();
  return weight * x.mul_(scale).to(hidden.scalar_type());
}

// The same bits for bfloat16 in two loops and one ATen op: the mean's sum is ATen's (its
// order is ATen's own); every other step is elementwise and rounds where the op it replaces
// rounds (a bfloat16 product or sum is the float32 one rounded to nearest even; each
// rounding is a call, so no compiler contracts a product into a sum across it).
Tensor rms_norm(const Tensor& hidden, const Tensor& weight, double eps) {
  using at::BFloat16;
  if (hidden.scalar_type() != at::kBFloat16 || weight.scalar_type() != at::kBFloat16)
    return rms_norm_ops(hidden, weight, eps);
  const auto x = hidden.contiguous();
  const int64_t d = x.size(-1), rows = x.numel() / d;
  auto squares = at::empty({rows, d}, x.options().dtype(at::kFloat));
  const BFloat16* in = x.data_ptr<BFloat16>();
  float* square = squares.data_ptr<float>();
  for (int64_t i = 0; i < rows * d; ++i) square[i] = static_cast<float>(in[i]) * static_cast<float>(in[i]);
  // ATen's mean on a CPU is its sum divided by the count in float32 (at::mean_out); the
  // division is done here, which saves the op that wraps the count as a tensor.
  const auto sums = at::sum(squares, -1);
  const float* sum = sums.data_ptr<float>();
  const auto w = weight.contiguous();
  const BFloat16* scale_by = w.data_ptr<BFloat16>();
  auto out = at::empty_like(x);
  BFloat16* normed = out.data_ptr<BFloat16>();
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = 1.0f / std::sqrt(sum[r] / static_cast<float>(d) + static_cast<float>(eps));
    for (int64_t c = 0; c < d; ++c) {
      const BFloat16 rounded(static_cast<float>(in[r * d + c]) * scale);
      normed[r * d + c] = BFloat16(static_cast<float>(scale_by[c]) * static_cast<float>(rounded));
    }
  }
  return out;
}

// eagle3.decoder_layer.rotate: x [B, n, heads, D], cos / sin [B, n, D] ->
// x * cos + rotate_half(x) * sin.
Tensor rotate_ops(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  return x * cos.unsqueeze(2) + at::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1) * sin.unsqueeze(2);
}

// The same bits for bfloat16 in one pass (contiguous out), each product and the sum rounded
// as the three ATen ops round them.
Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  using at::BFloat16;
  if (x.scalar_type() != at::kBFloat16 || cos.scalar_type() != at::kBFloat16 || sin.scalar_type() != at::kBFloat16 ||
      x.stride(-1) != 1)
    return rotate_ops(x, cos, sin);
  const int64_t b = x.size(0), n = x.size(1), heads = x.size(2), d = x.size(3), half = d / 2;
  const auto c = cos.expand({b, n, d}).contiguous(), s = sin.expand({b, n, d}).contiguous();
  auto out = at::empty({b, n, heads, d}, x.options());
  const BFloat16 *in = x.data_ptr<BFloat16>(), *cos_data = c.data_ptr<BFloat16>(), *sin_data = s.data_ptr<BFloat16>();
  BFloat16* rotated = out.data_ptr<BFloat16>();
  const auto stride = x.strides();
  auto product = [](BFloat16 a, BFloat16 b) { return static_cast<float>(BFloat16(static_cast<float>(a) * static_cast<float>(b))); };
  for (int64_t row = 0; row < b * n; ++row) {
    const BFloat16 *row_cos = cos_data + row * d, *row_sin = sin_data + row * d;
    for (int64_t h = 0; h < heads; ++h) {
      const BFloat16* head = in + row / n * stride[0] + row % n * stride[1] + h * stride[2];
      BFloat16* target = rotated + (row * heads + h) * d;
      for (int64_t e = 0; e < half; ++e) {
        const BFloat16 first = head[e], second = head[e + half];
        target[e] = BFloat16(product(first, row_cos[e]) + product(-second, row_sin[e]));
        target[e + half] = BFloat16(product(second, row_cos[e + half]) + product(first, row_sin[e + half]));
      }
    }
  }
  return out;
}

}  // namespace

Tensor exact_attention(const Tensor& query, const Tensor& key, const Tensor& value, const OptionalTensor& mask,
                       double scaling);  // attention.cpp
Tensor last_argmax(const Tensor& logits);  // argmax.cpp
std::vector<Tensor> top_children(const Tensor& logits, const Tensor& scores, const Tensor& d2t,
                                 int64_t top_k);  // top_children.cpp

namespace {

// normed [B, n, in] -> query [B, heads, n, D], key and value [B, kv_heads, n, D]: the stacked
// q/k/v product, q and k normed per head where the family does, then rotated.
std::vector<Tensor> project_and_rotate(const Tensor& normed, const Tensor& qkv, const OptionalTensor& qkv_bias,
                                       int64_t min_rows, int64_t max_rows, int64_t heads, int64_t kv_heads,
                                       int64_t head_dim, const OptionalTensor& q_norm, const OptionalTensor& k_norm,
                                       double q_eps, double k_eps, const Tensor& cos, const Tensor& sin) {
  const int64_t b = normed.size(0), n = normed.size(1), d = head_dim;
  const auto projected = by_rows(normed, qkv, qkv_bias, min_rows, max_rows);
  auto qk = projected.slice(-1, 0, (heads + kv_heads) * d).view({b, n, heads + kv_heads, d});  // q's, then k's
  const auto v = projected.slice(-1, (heads + kv_heads) * d);
  if (q_norm.has_value())  // Qwen3 normalises each head's query and key before rotating them
    qk = at::cat({rms_norm(qk.slice(2, 0, heads), *q_norm, q_eps), rms_norm(qk.slice(2, heads), *k_norm, k_eps)}, 2);
  qk = rotate(qk, cos, sin);
  return {qk.slice(2, 0, heads).transpose(1, 2), qk.slice(2, heads).transpose(1, 2),
          v.view({b, n, kv_heads, d}).transpose(1, 2)};
}

}  // namespace

// The target's layer: hidden [B, n, hidden] normed, then project_and_rotate.
std::vector<Tensor> attention_inputs(const Tensor& hidden, const Tensor& norm, double eps, const Tensor& qkv,
                                     const OptionalTensor& qkv_bias, int64_t min_rows, int64_t max_rows,
                                     int64_t heads, int64_t kv_heads, int64_t head_dim, const OptionalTensor& q_norm,
                                     const OptionalTensor& k_norm, double q_eps, double k_eps, const Tensor& cos,
                                     const Tensor& sin) {
  return project_and_rotate(rms_norm(hidden, norm, eps), qkv, qkv_bias, min_rows, max_rows, heads, kv_heads,
                            head_dim, q_norm, k_norm, q_eps, k_eps, cos, sin);
}

// The EAGLE-3 head's layer (eagle3.head.Eagle3DecoderLayer): its q/k/v read the normed token
// embeddings [B, n, H] and the normed draft hidden states [B, n, H] side by side, embeddings
// first; one product over any number of rows (the draft wants speed, not row invariance).
std::vector<Tensor> draft_attention_inputs(const Tensor& embeds, const Tensor& embed_norm, const Tensor& hidden,
                                           const Tensor& hidden_norm, double eps, const Tensor& qkv,
                                           const OptionalTensor& qkv_bias, int64_t heads, int64_t kv_heads,
                                           int64_t head_dim, const Tensor& cos, const Tensor& sin) {
  const auto normed = at::cat({rms_norm(embeds, embed_norm, eps), rms_norm(hidden, hidden_norm, eps)}, -1);
  return project_and_rotate(normed, qkv, qkv_bias, 1, 0, heads, kv_heads, head_dim, c10::nullopt, c10::nullopt, 0.0,
                            0.0, cos, sin);
}

// eagle3/csrc/attention.cpp, then o, the residual and the MLP (SiLU-gated).
Tensor layer_output(const Tensor& hidden, const Tensor& query, const Tensor& key, const Tensor& value,
                    const OptionalTensor& mask, double scaling, const Tensor& o, const OptionalTensor& o_bias,
                    int64_t o_min_rows, int64_t o_max_rows, const Tensor& norm, double eps, const Tensor& gate_up,
                    const OptionalTensor& gate_up_bias, int64_t gate_up_min_rows, int64_t gate_up_max_rows,
                    int64_t intermediate, const Tensor& down, const OptionalTensor& down_bias, int64_t down_min_rows,
                    int64_t down_max_rows) {
  const int64_t b = query.size(0), heads = query.size(1), q = query.size(2), d = query.size(3);
  const auto attended = exact_attention(query, key, value, mask, scaling);  // [B, q, heads, D]
  const auto h = hidden + by_rows(attended.view({b, q, heads * d}), o, o_bias, o_min_rows, o_max_rows);
  const auto gate_and_up = by_rows(rms_norm(h, norm, eps), gate_up, gate_up_bias, gate_up_min_rows, gate_up_max_rows)
                               .split(intermediate, -1);
  return h + by_rows(at::silu(gate_and_up[0]) * gate_and_up[1], down, down_bias, down_min_rows, down_max_rows);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("attention_inputs", &attention_inputs);
  m.def("draft_attention_inputs", &draft_attention_inputs);
  m.def("rms_norm", &rms_norm);
  m.def("layer_output", &layer_output);
  m.def("attention", &exact_attention);
  m.def("pack", &pack);
  m.def("product", &product);
  m.def("product_instructions", &product_instructions);
  m.def("argmax", &last_argmax);
  m.def("top_children", &top_children);
}
