// Query-side embedding arithmetic: a static encoder's text vectors and the symmetric
// int8 quantization of float rows (toolsift.kernels.int8, toolsift.encoders.static).
// Plain loops in a fixed order and no fused multiply-adds, so every build rounds the same
// way as the NumPy twins in toolsift.kernels.int8_reference (tests compare bit for bit).
#pragma once

#include <cstddef>
#include <cstdint>

namespace toolsift {

// out[i] (d floats, zero on entry) = the unit-length sum of codes[r] * mult[r] over the
// rows r = ids[ptr[i] : ptr[i+1]]: float32 products added in token order, the squared
// norm as float32 squares summed in float64; a zero row when the squared norm is at most 1e-24. Rows are trusted
// (0 <= r < vocab, checked by the caller). Texts split over `threads` when there are many.
void static_mean_rows(const int8_t* codes, std::size_t d, const float* mult, const int64_t* ptr,
                      std::size_t n_texts, const int64_t* ids, float* out, int threads);

// Each row of x (n x d, finite) as int8 codes and one float32 scale: scale = max|x| / 127,
// code = rint(x * 127 / max|x|) in float64 (ties to even); an all-zero row gets scale 0
// and zero codes.
void quantize_rows(const float* x, std::size_t n, std::size_t d, int8_t* codes, float* scales, int threads);

}  // namespace toolsift
