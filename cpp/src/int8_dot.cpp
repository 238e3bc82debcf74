// The int8 dot products (toolsift/int8_dot.h), on the widest integer dot product the CPU has.
//
// A scan streams every row of a field once per query; on a 2.5 MB matrix (6,400 tools,
// d = 384) a loop the compiler vectorises for baseline x86-64 takes ~90 us, and
// AVX-512 VNNI's vpdpbusd (64 byte products per instruction) ~40 us, where memory
// bandwidth becomes the bound. vpdpbusd multiplies unsigned by signed bytes, so rows are
// flipped to unsigned (c + 128, one xor) and 128 * sum(q) is taken off the int32 sum:
// exact. The path is chosen at run time (__builtin_cpu_supports), so one wheel runs
// everywhere and uses what it finds. Scan and gather share one dot product per path: a
// scan's rows are consecutive, a gather's are given by id.
#include "toolsift/int8_dot.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "int8_heap.h"
#include "toolsift/parallel.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TOOLSIFT_X86 1
#include <immintrin.h>
#endif

namespace toolsift {
namespace {

using detail::TopN;

// Rows per scan block: 256 rows of d = 384 are 96 KB, so with a batch of queries a block
// stays in L2 while every query passes over it.
constexpr std::size_t kBlockRows = 256;
// Row-blocks per thread below which a scan does not start threads.
constexpr std::size_t kMinBlocksPerThread = 16;
// Queries per thread below which a gather does not start threads.
constexpr std::size_t kMinQueriesPerThread = 64;

inline float finish(int32_t acc, float qs, float s) { return static_cast<float>(acc) * qs * s; }

// The rows a query meets: consecutive (scan, top-n, probe) or by id (gather); slot t of
// the output. kStreamed: the rows come from memory, not cache (an IVF probe's lists, a
// matrix of kStreamBytes or more), so the vector loop reads them in address order
// (dots_vnni).
template <bool Streamed>
struct FromRow {  // consecutive rows from `base` on (slot t is row base + t)
  static constexpr bool kStreamed = Streamed;
  const Int8Rows& r;
  std::size_t base;
  const int8_t* row(std::size_t t) const { return r.codes + (base + t) * r.d; }
  float scale(std::size_t t) const { return r.scales[base + t]; }
};

// A matrix at least this large is read from memory rather than cache (this machine's L3 is
// 32 MB, shared), so its scans read rows in address order (dots_vnni).
constexpr std::size_t kStreamBytes = std::size_t{16} << 20;
bool streamed(const Int8Rows& r) { return r.n * r.d >= kStreamBytes; }

struct ById {
  static constexpr bool kStreamed = false;
  const Int8Rows& r;
  const int64_t* ids;
  const int8_t* row(std::size_t t) const { return r.codes + static_cast<std::size_t>(ids[t]) * r.d; }
  float scale(std::size_t t) const { return r.scales[static_cast<std::size_t>(ids[t])]; }
};

// out[t] = query qi against src's row t, for t in [lo, hi).
template <class Src>
void dots_portable(const int8_t* qi, float qs, std::size_t d, const Src& src, std::size_t lo, std::size_t hi,
                   float* out) {
  for (std::size_t t = lo; t < hi; ++t) {
    const int8_t* c = src.row(t);
    int32_t acc = 0;
    for (std::size_t k = 0; k < d; ++k) acc += static_cast<int32_t>(qi[k]) * static_cast<int32_t>(c[k]);
    out[t] = finish(acc, qs, src.scale(t));
  }
}

#ifdef TOOLSIFT_X86

// GCC 12's own _mm512_reduce_add_epi32 trips -Wmaybe-uninitialized (an intentionally
// undefined register in avx512fintrin.h); nothing of ours is uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

template <class Src>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void dots_vnni(const int8_t* qi, float qs, std::size_t d,
                                                                      const Src& src, std::size_t lo,
                                                                      std::size_t hi, float* out) {
  const std::size_t full = d / 64, tail = d % 64;
  const __mmask64 tail_mask = tail ? (~__mmask64{0} >> (64 - tail)) : 0;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  int32_t qsum = 0;
  for (std::size_t k = 0; k < d; ++k) qsum += qi[k];
  const int32_t corr = 128 * qsum;
  // A masked load zeroes the query past d, so the flipped (128) row bytes there add 0.
#define TS_STEP(acc, c, b, qv, masked)                                                                       \
  _mm512_dpbusd_epi32((acc),                                                                                 \
                      _mm512_xor_si512((masked) ? _mm512_maskz_loadu_epi8(tail_mask, (c) + 64 * (b))         \
                                                : _mm512_loadu_si512((c) + 64 * (b)),                        \
                                       flip),                                                                \
                      (qv))
  // Four rows at a time: four independent accumulator chains hide vpdpbusd's latency.
  std::size_t t = lo;
  for (; t + 4 <= hi; t += 4) {
    const int8_t *c0 = src.row(t), *c1 = src.row(t + 1), *c2 = src.row(t + 2), *c3 = src.row(t + 3);
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    if constexpr (Src::kStreamed) {
      // Row after row: the loads go forward through memory, which the hardware
      // prefetcher follows. Interleaving the four rows (below) jumps back and forth
      // by a row's length: 25% slower from DRAM, 10% faster from cache (one query
      // against 200k rows vs 20k rows, measured on a 2-core AMD EPYC).
      for (std::size_t b = 0; b < full; ++b) a0 = TS_STEP(a0, c0, b, _mm512_loadu_si512(qi + 64 * b), false);
      for (std::size_t b = 0; b < full; ++b) a1 = TS_STEP(a1, c1, b, _mm512_loadu_si512(qi + 64 * b), false);
      for (std::size_t b = 0; b < full; ++b) a2 = TS_STEP(a2, c2, b, _mm512_loadu_si512(qi + 64 * b), false);
      for (std::size_t b = 0; b < full; ++b) a3 = TS_STEP(a3, c3, b, _mm512_loadu_si512(qi + 64 * b), false);
    } else {
      for (std::size_t b = 0; b < full; ++b) {
        const __m512i qv = _mm512_loadu_si512(qi + 64 * b);
        a0 = TS_STEP(a0, c0, b, qv, false);
        a1 = TS_STEP(a1, c1, b, qv, false);
        a2 = TS_STEP(a2, c2, b, qv, false);
        a3 = TS_STEP(a3, c3, b, qv, false);
      }
    }
    if (tail) {
      const __m512i qv = _mm512_maskz_loadu_epi8(tail_mask, qi + 64 * full);
      a0 = TS_STEP(a0, c0, full, qv, true);
      a1 = TS_STEP(a1, c1, full, qv, true);
      a2 = TS_STEP(a2, c2, full, qv, true);
      a3 = TS_STEP(a3, c3, full, qv, true);
    }
    out[t] = finish(_mm512_reduce_add_epi32(a0) - corr, qs, src.scale(t));
    out[t + 1] = finish(_mm512_reduce_add_epi32(a1) - corr, qs, src.scale(t + 1));
    out[t + 2] = finish(_mm512_reduce_add_epi32(a2) - corr, qs, src.scale(t + 2));
    out[t + 3] = finish(_mm512_reduce_add_epi32(a3) - corr, qs, src.scale(t + 3));
  }
  for (; t < hi; ++t) {
    const int8_t* c = src.row(t);
    __m512i a0 = _mm512_setzero_si512();
    for (std::size_t b = 0; b < full; ++b) a0 = TS_STEP(a0, c, b, _mm512_loadu_si512(qi + 64 * b), false);
    if (tail) a0 = TS_STEP(a0, c, full, _mm512_maskz_loadu_epi8(tail_mask, qi + 64 * full), true);
    out[t] = finish(_mm512_reduce_add_epi32(a0) - corr, qs, src.scale(t));
  }
#undef TS_STEP
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

template <class Src>
__attribute__((target("avx2"))) void dots_avx2(const int8_t* qi, float qs, std::size_t d, const Src& src,
                                               std::size_t lo, std::size_t hi, float* out) {
  // Sign-extend 16 bytes to int16 and multiply-add pairs into int32 (vpmaddwd).
  const std::size_t full = d / 16 * 16;
  for (std::size_t t = lo; t < hi; ++t) {
    const int8_t* c = src.row(t);
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
    out[t] = finish(total, qs, src.scale(t));
  }
}

#endif  // TOOLSIFT_X86

enum class Isa { kVnni, kAvx2, kPortable };

Isa choose() {
#ifdef TOOLSIFT_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vnni")) {
    return Isa::kVnni;
  }
  if (__builtin_cpu_supports("avx2")) return Isa::kAvx2;
#endif
  return Isa::kPortable;
}

Isa isa() {
  static const Isa chosen = choose();
  return chosen;
}

template <class Src>
void dots(Isa path, const int8_t* qi, float qs, std::size_t d, const Src& src, std::size_t lo, std::size_t hi,
          float* out) {
#ifdef TOOLSIFT_X86
  if (path == Isa::kVnni) return dots_vnni(qi, qs, d, src, lo, hi, out);
  if (path == Isa::kAvx2) return dots_avx2(qi, qs, d, src, lo, hi, out);
#endif
  (void)path;
  dots_portable(qi, qs, d, src, lo, hi, out);
}

template <bool Streamed>
void scan_rows(Isa path, const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& r, float* out,
               int threads) {
  const FromRow<Streamed> src{r, 0};
  const std::size_t blocks = (r.n + kBlockRows - 1) / kBlockRows;
  parallel_chunks(blocks, threads, kMinBlocksPerThread, [&](int, std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b) {
      const std::size_t lo = b * kBlockRows, hi = std::min(r.n, lo + kBlockRows);
      for (std::size_t i = 0; i < m; ++i) dots(path, q + i * r.d, q_scales[i], r.d, src, lo, hi, out + i * r.n);
    }
  });
}

void scan(Isa path, const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& r, float* out,
          int threads) {
  if (m == 0 || r.n == 0) return;
  if (streamed(r)) return scan_rows<true>(path, q, q_scales, m, r, out, threads);
  scan_rows<false>(path, q, q_scales, m, r, out, threads);
}

void gather(Isa path, const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& r,
            const int64_t* cand_ptr, const int64_t* cand_ids, float* out, int threads) {
  const ById src{r, cand_ids};
  parallel_chunks(m, threads, kMinQueriesPerThread, [&](int, std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      dots(path, q + i * r.d, q_scales[i], r.d, src, static_cast<std::size_t>(cand_ptr[i]),
           static_cast<std::size_t>(cand_ptr[i + 1]), out);
    }
  });
}

template <bool Streamed>
void top_rows(Isa path, const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& r,
              const int64_t* keys, std::size_t n, int64_t* out, int64_t* counts, int threads) {
  parallel_chunks(m, threads, kMinQueriesPerThread / 8, [&](int, std::size_t i0, std::size_t i1) {
    std::vector<float> heap_scores(n * (i1 - i0));
    std::vector<TopN> heaps;
    heaps.reserve(i1 - i0);
    for (std::size_t i = i0; i < i1; ++i) heaps.emplace_back(heap_scores.data() + (i - i0) * n, out + i * n, n);
    // A block of rows at a time for every query of the chunk: the block stays in cache.
    std::vector<float> buf(kBlockRows);
    for (std::size_t lo = 0; lo < r.n; lo += kBlockRows) {
      const std::size_t hi = std::min(r.n, lo + kBlockRows);
      for (std::size_t i = i0; i < i1; ++i) {
        dots(path, q + i * r.d, q_scales[i], r.d, FromRow<Streamed>{r, lo}, 0, hi - lo, buf.data());
        TopN& h = heaps[i - i0];
        // Most rows of a full heap fall below its floor: one predictable comparison
        // each (offer's "positive?" test alone mispredicted on ~1 row in 5).
        float floor = h.floor();
        for (std::size_t j = lo; j < hi; ++j) {
          if (buf[j - lo] >= floor) {
            h.offer(buf[j - lo], keys[j]);
            floor = h.floor();
          }
        }
      }
    }
    for (std::size_t i = i0; i < i1; ++i) {
      heaps[i - i0].sort_best_first();
      counts[i] = static_cast<int64_t>(heaps[i - i0].size());
    }
  });
}

void top(Isa path, const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& r, const int64_t* keys,
         std::size_t n, int64_t* out, int64_t* counts, int threads) {
  if (streamed(r)) return top_rows<true>(path, q, q_scales, m, r, keys, n, out, counts, threads);
  top_rows<false>(path, q, q_scales, m, r, keys, n, out, counts, threads);
}

void probe(Isa path, const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
           const int64_t* list_ptr, const int64_t* list_ids, const int64_t* probe_ptr, const int64_t* probes,
           const int64_t* out_ptr, float* out_scores, int64_t* out_ids, int threads) {
  parallel_chunks(m, threads, 1, [&](int, std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      auto o = static_cast<std::size_t>(out_ptr[i]);
      for (int64_t p = probe_ptr[i]; p < probe_ptr[i + 1]; ++p) {
        const auto lo = static_cast<std::size_t>(list_ptr[probes[p]]);
        const auto hi = static_cast<std::size_t>(list_ptr[probes[p] + 1]);
        dots(path, q + i * lists.d, q_scales[i], lists.d, FromRow<true>{lists, lo}, 0, hi - lo, out_scores + o);
        std::copy(list_ids + lo, list_ids + hi, out_ids + o);
        o += hi - lo;
      }
    }
  });
}

void probe_top(Isa path, const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
               const int64_t* list_ptr, const int64_t* list_ids, const int64_t* probe_ptr, const int64_t* probes,
               std::size_t n, int64_t* out, int64_t* counts, int threads) {
  parallel_chunks(m, threads, 1, [&](int, std::size_t i0, std::size_t i1) {
    std::vector<float> heap_scores(n);
    std::vector<float> buf(kBlockRows);
    for (std::size_t i = i0; i < i1; ++i) {
      TopN h(heap_scores.data(), out + i * n, n);
      float floor = h.floor();
      for (int64_t p = probe_ptr[i]; p < probe_ptr[i + 1]; ++p) {
        const auto lo = static_cast<std::size_t>(list_ptr[probes[p]]);
        const auto hi = static_cast<std::size_t>(list_ptr[probes[p] + 1]);
        // A block of the list at a time: its scores go straight into the heap.
        for (std::size_t b = lo; b < hi; b += kBlockRows) {
          const std::size_t e = std::min(hi, b + kBlockRows);
          dots(path, q + i * lists.d, q_scales[i], lists.d, FromRow<true>{lists, b}, 0, e - b, buf.data());
          for (std::size_t j = b; j < e; ++j) {
            if (buf[j - b] >= floor) {
              h.offer(buf[j - b], list_ids[j]);
              floor = h.floor();
            }
          }
        }
      }
      counts[i] = static_cast<int64_t>(h.size());
    }
  });
}

}  // namespace

const char* int8_dot_isa() {
  switch (isa()) {
    case Isa::kVnni:
      return "avx512-vnni";
    case Isa::kAvx2:
      return "avx2";
    default:
      return "portable";
  }
}

void int8_scan(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows, float* out,
               int threads) {
  scan(isa(), q, q_scales, m, rows, out, threads);
}

void int8_gather(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                 const int64_t* cand_ptr, const int64_t* cand_ids, float* out, int threads) {
  gather(isa(), q, q_scales, m, rows, cand_ptr, cand_ids, out, threads);
}

void int8_top(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows, const int64_t* keys,
              std::size_t n, int64_t* out, int64_t* counts, int threads) {
  top(isa(), q, q_scales, m, rows, keys, n, out, counts, threads);
}

void int8_probe(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
                const int64_t* list_ptr, const int64_t* list_ids, const int64_t* probe_ptr, const int64_t* probes,
                const int64_t* out_ptr, float* out_scores, int64_t* out_ids, int threads) {
  probe(isa(), q, q_scales, m, lists, list_ptr, list_ids, probe_ptr, probes, out_ptr, out_scores, out_ids, threads);
}

void int8_probe_top(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
                    const int64_t* list_ptr, const int64_t* list_ids, const int64_t* probe_ptr,
                    const int64_t* probes, std::size_t n, int64_t* out, int64_t* counts, int threads) {
  probe_top(isa(), q, q_scales, m, lists, list_ptr, list_ids, probe_ptr, probes, n, out, counts, threads);
}

void int8_scan_portable(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                        float* out) {
  scan(Isa::kPortable, q, q_scales, m, rows, out, 1);
}

void int8_gather_portable(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                          const int64_t* cand_ptr, const int64_t* cand_ids, float* out) {
  gather(Isa::kPortable, q, q_scales, m, rows, cand_ptr, cand_ids, out, 1);
}

}  // namespace toolsift
