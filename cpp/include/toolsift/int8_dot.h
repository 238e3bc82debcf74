// Int8 dot products of query rows against a matrix of int8 rows: the dense field's scan.
//
// out[i * n + j] = float(q[i] . codes[j]) * q_scales[i] * scales[j], the dot product
// accumulated exactly in int32 (|q|, |c| <= 127 and d < 131,000), then the two float32
// multiplies in that order: the same bits on every instruction set.
#pragma once

#include <cstddef>
#include <cstdint>

namespace toolsift {

struct Int8Rows {
  const int8_t* codes;  // [n, d], row-major
  const float* scales;  // [n]
  std::size_t n;
  std::size_t d;
};

// The instruction set the scan runs on here: "avx512-vnni", "avx2" or "portable".
const char* int8_dot_isa();

// Scores of m query rows (q [m, d], q_scales [m]) against every row of `rows`, into
// out [m, n]. Parallel over blocks of matrix rows on `threads` threads (<= 0: all CPUs);
// small scans run on the calling thread. Inputs are trusted (checked by the caller).
void int8_scan(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows, float* out,
               int threads);

// Forces the portable loop (tests compare it with the vector paths on this machine).
void int8_scan_portable(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                        float* out);

}  // namespace toolsift
