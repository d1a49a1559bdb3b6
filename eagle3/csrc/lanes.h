// Sixteen float32 lanes, whatever the CPU's vector width, and what the kernels do with them:
// load, cast bits, exponentiate. The order of every sum is written out where it is made, over
// sixteen lanes, so it is the same for any caller of any build. The loops themselves run in
// the widest vector the build's registers hold (Vector): GCC splits a wider one's arithmetic
// well but takes it through memory, and its shuffles and selects one lane at a time.
// eagle3.native puts this file's digest in the build's flags, so that a change to it
// rebuilds the module (torch's build checks the sources alone).

#pragma once

#include <cstdint>
#include <cstring>

constexpr int64_t LANES = 16;
typedef float Floats __attribute__((vector_size(LANES * sizeof(float))));
typedef int32_t Ints __attribute__((vector_size(LANES * sizeof(int32_t))));

typedef float Floats8 __attribute__((vector_size(8 * sizeof(float))));
typedef int32_t Ints8 __attribute__((vector_size(8 * sizeof(int32_t))));

// The widest float32 vector of this build's registers: sixteen lanes with AVX-512, else eight
// (AVX2). A sixteen-lane Floats is PIECES of them, lane for lane.
#if defined(__AVX512F__)
typedef Floats Vector;
typedef Ints VectorInts;
#else
typedef Floats8 Vector;
typedef Ints8 VectorInts;
#endif
constexpr int64_t WIDTH = sizeof(Vector) / sizeof(float), PIECES = LANES / WIDTH;

template <typename To, typename From>
inline To bits_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

// Elements [0, count) of p (count clamped to 0..V's lanes), the rest 0.
template <typename V>
inline V load_part(const float* p, int64_t count) {
  V x = {};
  if (count >= static_cast<int64_t>(sizeof x / sizeof(float)))
    std::memcpy(&x, p, sizeof x);
  else if (count > 0)
    std::memcpy(&x, p, count * sizeof(float));
  return x;
}

// {0, 1, 2, ...}: each lane's number.
template <typename I>
inline I lane_numbers() {
  I x;
  for (int32_t l = 0; l < static_cast<int32_t>(sizeof x / sizeof(int32_t)); ++l) x[l] = l;
  return x;
}

// exp(x) for x <= 0 in float32, lane by lane (Cephes' expf: x = n ln2 + r, a degree-6
// polynomial in r, times 2^n). Below -87, where e^x leaves float32's normal range, it is e^-87.
// Any number of lanes, the same arithmetic in each.
template <typename V>
inline V exp_nonpositive(V x) {
  typedef int32_t Integers __attribute__((vector_size(sizeof(V))));
  x = x < -87.0f ? V{} - 87.0f : x;
  const V n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // rounded to the nearest integer
  const V r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * bits_as<V>((__builtin_convertvector(n, Integers) + 127) << 23);
}
