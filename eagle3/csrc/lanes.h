// Sixteen float32 lanes, whatever the CPU's vector width (the compiler splits them where its
// registers are narrower), and what the kernels do with them: load, cast bits, exponentiate.
// The order of every sum is written out where it is made, so it is the same for any caller
// of this build. eagle3.native puts this file's digest in the build's flags, so that a
// change to it rebuilds the module (torch's build checks the sources alone).

#pragma once

#include <cstdint>
#include <cstring>

constexpr int64_t LANES = 16;
typedef float Floats __attribute__((vector_size(LANES * sizeof(float))));
typedef int32_t Ints __attribute__((vector_size(LANES * sizeof(int32_t))));

template <typename To, typename From>
inline To bits_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

// Elements [0, count) of p, the rest 0.
inline Floats load(const float* p, int64_t count = LANES) {
  Floats x = {};
  if (count == LANES)
    std::memcpy(&x, p, sizeof x);
  else
    std::memcpy(&x, p, count * sizeof(float));
  return x;
}

// exp(x) for x <= 0 in float32, lane by lane (Cephes' expf: x = n ln2 + r, a degree-6
// polynomial in r, times 2^n). Below -87, where e^x leaves float32's normal range, it is e^-87.
inline Floats exp_nonpositive(Floats x) {
  x = x < -87.0f ? Floats{} - 87.0f : x;
  const Floats n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // rounded to the nearest integer
  const Floats r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  Floats p = Floats{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * bits_as<Floats>((__builtin_convertvector(n, Ints) + 127) << 23);
}
