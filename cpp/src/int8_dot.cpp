// The int8 scan (toolsift/int8_dot.h), on the widest integer dot product the CPU has.
//
// The scan streams every row of a field once per query; on a 2.5 MB matrix (6,400 tools,
// d = 384) a loop the compiler vectorises for baseline x86-64 takes ~90 us, and
// AVX-512 VNNI's vpdpbusd (64 byte products per instruction) ~40 us, where memory
// bandwidth becomes the bound. vpdpbusd multiplies unsigned by signed bytes, so rows are
// flipped to unsigned (c + 128, one xor) and 128 * sum(q) is taken off the int32 sum:
// exact. The path is chosen at run time (__builtin_cpu_supports), so one wheel runs
// everywhere and uses what it finds.
#include "toolsift/int8_dot.h"

#include <algorithm>
#include <cstring>

#include "toolsift/parallel.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TOOLSIFT_X86 1
#include <immintrin.h>
#endif

namespace toolsift {
namespace {

// Rows per block: a block of 256 rows of d = 384 is 96 KB, so with a batch of queries it
// stays in L2 while every query passes over it.
constexpr std::size_t kBlockRows = 256;
// Row-blocks per thread below which a scan does not start threads.
constexpr std::size_t kMinBlocksPerThread = 16;

inline float finish(int32_t acc, float qs, float s) { return static_cast<float>(acc) * qs * s; }

void scan_block_portable(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& r,
                         std::size_t lo, std::size_t hi, float* out) {
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* qi = q + i * r.d;
    for (std::size_t j = lo; j < hi; ++j) {
      const int8_t* cj = r.codes + j * r.d;
      int32_t acc = 0;
      for (std::size_t k = 0; k < r.d; ++k) acc += static_cast<int32_t>(qi[k]) * static_cast<int32_t>(cj[k]);
      out[i * r.n + j] = finish(acc, q_scales[i], r.scales[j]);
    }
  }
}

#ifdef TOOLSIFT_X86

// GCC 12's own _mm512_reduce_add_epi32 trips -Wmaybe-uninitialized (an intentionally
// undefined register in avx512fintrin.h); nothing of ours is uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void scan_block_vnni(
    const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& r, std::size_t lo, std::size_t hi,
    float* out) {
  const std::size_t d = r.d, full = d / 64, tail = d % 64;
  const __mmask64 tail_mask = tail ? (~__mmask64{0} >> (64 - tail)) : 0;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* qi = q + i * d;
    int32_t qsum = 0;
    for (std::size_t k = 0; k < d; ++k) qsum += qi[k];
    const int32_t corr = 128 * qsum;
    // Four rows at a time: four independent accumulator chains hide vpdpbusd's latency.
    // A masked load zeroes the query past d, so the flipped (128) row bytes there add 0.
#define step(acc, c, b, qv, masked) _mm512_dpbusd_epi32( \
    (acc), _mm512_xor_si512((masked) ? _mm512_maskz_loadu_epi8(tail_mask, (c) + 64 * (b)) \
                                     : _mm512_loadu_si512((c) + 64 * (b)), flip), (qv))
    float* o = out + i * r.n;
    const float qs = q_scales[i];
    std::size_t j = lo;
    for (; j + 4 <= hi; j += 4) {
      const int8_t* c = r.codes + j * d;
      __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
      for (std::size_t b = 0; b < full; ++b) {
        const __m512i qv = _mm512_loadu_si512(qi + 64 * b);
        a0 = step(a0, c, b, qv, false);
        a1 = step(a1, c + d, b, qv, false);
        a2 = step(a2, c + 2 * d, b, qv, false);
        a3 = step(a3, c + 3 * d, b, qv, false);
      }
      if (tail) {
        const __m512i qv = _mm512_maskz_loadu_epi8(tail_mask, qi + 64 * full);
        a0 = step(a0, c, full, qv, true);
        a1 = step(a1, c + d, full, qv, true);
        a2 = step(a2, c + 2 * d, full, qv, true);
        a3 = step(a3, c + 3 * d, full, qv, true);
      }
      o[j] = finish(_mm512_reduce_add_epi32(a0) - corr, qs, r.scales[j]);
      o[j + 1] = finish(_mm512_reduce_add_epi32(a1) - corr, qs, r.scales[j + 1]);
      o[j + 2] = finish(_mm512_reduce_add_epi32(a2) - corr, qs, r.scales[j + 2]);
      o[j + 3] = finish(_mm512_reduce_add_epi32(a3) - corr, qs, r.scales[j + 3]);
    }
    for (; j < hi; ++j) {
      const int8_t* c = r.codes + j * d;
      __m512i a0 = _mm512_setzero_si512();
      for (std::size_t b = 0; b < full; ++b) a0 = step(a0, c, b, _mm512_loadu_si512(qi + 64 * b), false);
      if (tail) a0 = step(a0, c, full, _mm512_maskz_loadu_epi8(tail_mask, qi + 64 * full), true);
      o[j] = finish(_mm512_reduce_add_epi32(a0) - corr, qs, r.scales[j]);
    }
#undef step
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

__attribute__((target("avx2"))) void scan_block_avx2(const int8_t* q, const float* q_scales, std::size_t m,
                                                     const Int8Rows& r, std::size_t lo, std::size_t hi,
                                                     float* out) {
  // Sign-extend 16 bytes to int16 and multiply-add pairs into int32 (vpmaddwd).
  const std::size_t d = r.d, full = d / 16 * 16;
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* qi = q + i * d;
    float* o = out + i * r.n;
    for (std::size_t j = lo; j < hi; ++j) {
      const int8_t* c = r.codes + j * d;
      __m256i acc = _mm256_setzero_si256();
      for (std::size_t k = 0; k < full; k += 16) {
        const __m256i cw = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + k)));
        const __m256i qw = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qi + k)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(cw, qw));
      }
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
      int32_t total = _mm_cvtsi128_si32(s);
      for (std::size_t k = full; k < d; ++k) total += static_cast<int32_t>(qi[k]) * static_cast<int32_t>(c[k]);
      o[j] = finish(total, q_scales[i], r.scales[j]);
    }
  }
}

#endif  // TOOLSIFT_X86

using BlockFn = void (*)(const int8_t*, const float*, std::size_t, const Int8Rows&, std::size_t, std::size_t,
                         float*);

struct Path {
  BlockFn fn;
  const char* name;
};

Path choose() {
#ifdef TOOLSIFT_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vnni")) {
    return {&scan_block_vnni, "avx512-vnni"};
  }
  if (__builtin_cpu_supports("avx2")) return {&scan_block_avx2, "avx2"};
#endif
  return {&scan_block_portable, "portable"};
}

const Path& path() {
  static const Path p = choose();
  return p;
}

void run(BlockFn fn, const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& r, float* out,
         int threads) {
  if (m == 0 || r.n == 0) return;
  if (r.d == 0) {
    std::fill(out, out + m * r.n, 0.0f);
    return;
  }
  const std::size_t blocks = (r.n + kBlockRows - 1) / kBlockRows;
  parallel_chunks(blocks, threads, kMinBlocksPerThread, [&](int, std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b) {
      fn(q, q_scales, m, r, b * kBlockRows, std::min(r.n, (b + 1) * kBlockRows), out);
    }
  });
}

}  // namespace

const char* int8_dot_isa() { return path().name; }

void int8_scan(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows, float* out,
               int threads) {
  run(path().fn, q, q_scales, m, rows, out, threads);
}

void int8_scan_portable(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                        float* out) {
  run(&scan_block_portable, q, q_scales, m, rows, out, 1);
}

}  // namespace toolsift
