// The exact prefilter of int8 top-n scans (toolsift/int8_coarse.h).
//
// Why: a one-step hybrid search takes its dense candidates from an exact scan of every
// description vector (6,417 rows x 384 int8 = 2.5 MB per query at the pooled catalogue),
// more than this CPU's 2 MB L2, so the scan runs at L3 bandwidth (~13 ns a row against
// ~6 ns from L2). The 4-bit codes are half the bytes and their sums bound every row's
// score; only the ~5% of rows whose bound can still make the top n are read in int8.
//
// One query, in three steps: (1) every row's coarse sum q.c' (vpermb turns a 4-bit index
// into its level, vpdpbusd multiplies 64 levels by 64 query codes), its upper bound and a
// top-n heap of the coarse estimates (several queries share the reading and decoding of
// each block: top_shared); (2) exact int8 scores of that heap's rows, which
// sets a floor close to the final n-th best; (3) exact scores of every other row whose
// bound reaches the floor. Which rows are read depends on the bounds; the kept set does
// not (detail::TopN): the result is int8_top's.
#include "toolsift/int8_coarse.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
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

// Lloyd's 1-d k-means on the histogram of code values (-128..127): levels where codes are
// dense, so |c - c'| is small. Any levels give a valid bound; these give a tight one.
std::array<int8_t, 16> fit_levels(const std::array<uint64_t, 256>& hist) {
  uint64_t total = 0;
  for (uint64_t h : hist) total += h;
  std::array<double, 16> lv{};
  if (total == 0) {
    for (int i = 0; i < 16; ++i) lv[i] = -120.0 + 16.0 * i;
  } else {  // start at the 16 quantiles' midpoints
    uint64_t seen = 0;
    int next = 0;
    for (int v = 0; v < 256 && next < 16; ++v) {
      seen += hist[v];
      while (next < 16 && static_cast<double>(seen) >= (next + 0.5) * static_cast<double>(total) / 16.0) {
        lv[next++] = v - 128.0;
      }
    }
    for (; next < 16; ++next) lv[next] = 127.0;
  }
  for (int it = 0; it < 30; ++it) {
    std::array<double, 16> sum{}, cnt{};
    for (int v = 0; v < 256; ++v) {
      if (!hist[v]) continue;
      const double x = v - 128.0;
      int best = 0;
      for (int i = 1; i < 16; ++i) best = std::abs(x - lv[i]) < std::abs(x - lv[best]) ? i : best;
      sum[best] += x * static_cast<double>(hist[v]);
      cnt[best] += static_cast<double>(hist[v]);
    }
    for (int i = 0; i < 16; ++i) lv[i] = cnt[i] > 0 ? sum[i] / cnt[i] : lv[i];
    std::sort(lv.begin(), lv.end());
  }
  std::array<int8_t, 16> out{};
  for (int i = 0; i < 16; ++i) out[i] = static_cast<int8_t>(std::clamp(std::lround(lv[i]), -128L, 127L));
  return out;
}

// The float nearest above sqrt(x): a bound that rounding cannot put below the true norm.
float sqrt_up(double x) {
  const double s = std::sqrt(x);
  float f = static_cast<float>(s);
  if (static_cast<double>(f) < s) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

#ifdef TOOLSIFT_X86

#define TS_COARSE_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni,avx512vbmi")))

// GCC 12's _mm512_permutexvar_epi8 trips -Wmaybe-uninitialized (an intentionally
// undefined register in avx512vbmiintrin.h), as int8_dot.cpp's reduction does.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Blocks of 16 rows (3 KB at d = 384) between a block's prefetch and its reading.
constexpr std::size_t kAhead = 4;

// Adds x's and y's 128-bit lanes pairwise: (x0 + x1, x2 + x3, y0 + y1, y2 + y3).
TS_COARSE_TARGET inline __m512i add_lane_pairs(__m512i x, __m512i y) {
  return _mm512_add_epi32(_mm512_shuffle_i32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_i32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Lane r of the result: the sum of a[r]'s 16 lanes (a transpose and add, ~3 ops a row
// where a reduction per row costs ~8).
TS_COARSE_TARGET inline __m512i reduce16(const __m512i* a) {
  __m512i s[8], t[4];
  for (int i = 0; i < 8; ++i) {
    s[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]),
                            _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(s[2 * i], s[2 * i + 1]),
                            _mm512_unpackhi_epi64(s[2 * i], s[2 * i + 1]));
  }
  return add_lane_pairs(add_lane_pairs(t[0], t[1]), add_lane_pairs(t[2], t[3]));
}

// The coarse sums q.c' (plus 128 sum(q), taken off by the caller) of the 16 rows of a
// block whose 4-bit codes start at `base`.
TS_COARSE_TARGET inline __m512i coarse_sums(const uint8_t* base, std::size_t row_bytes, std::size_t dp,
                                            const int8_t* q, __m512i lut) {
  // Four rows at a time: four accumulator chains, few registers (16 live accumulators
  // made the compiler spill and copy them); the query comes from L1 as a memory operand.
  alignas(64) __m512i acc[16];
  for (int t = 0; t < 16; t += 4) {
    const uint8_t* r0 = base + t * row_bytes;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (std::size_t b = 0; b < dp / 128; ++b) {
      const __m512i qlo = _mm512_loadu_si512(q + 128 * b);
      const __m512i qhi = _mm512_loadu_si512(q + 128 * b + 64);
      const __m512i v0 = _mm512_loadu_si512(r0 + 64 * b), v1 = _mm512_loadu_si512(r0 + row_bytes + 64 * b);
      const __m512i v2 = _mm512_loadu_si512(r0 + 2 * row_bytes + 64 * b);
      const __m512i v3 = _mm512_loadu_si512(r0 + 3 * row_bytes + 64 * b);
      a0 = _mm512_dpbusd_epi32(a0, _mm512_permutexvar_epi8(v0, lut), qlo);
      a1 = _mm512_dpbusd_epi32(a1, _mm512_permutexvar_epi8(v1, lut), qlo);
      a2 = _mm512_dpbusd_epi32(a2, _mm512_permutexvar_epi8(v2, lut), qlo);
      a3 = _mm512_dpbusd_epi32(a3, _mm512_permutexvar_epi8(v3, lut), qlo);
      a0 = _mm512_dpbusd_epi32(a0, _mm512_permutexvar_epi8(_mm512_srli_epi16(v0, 4), lut), qhi);
      a1 = _mm512_dpbusd_epi32(a1, _mm512_permutexvar_epi8(_mm512_srli_epi16(v1, 4), lut), qhi);
      a2 = _mm512_dpbusd_epi32(a2, _mm512_permutexvar_epi8(_mm512_srli_epi16(v2, 4), lut), qhi);
      a3 = _mm512_dpbusd_epi32(a3, _mm512_permutexvar_epi8(_mm512_srli_epi16(v3, 4), lut), qhi);
    }
    acc[t] = a0;
    acc[t + 1] = a1;
    acc[t + 2] = a2;
    acc[t + 3] = a3;
  }
  return reduce16(acc);
}

// Per-query scratch, reused across a thread's queries.
struct Scratch {
  std::vector<int8_t> q;          // the query, zero-padded to dp
  std::vector<float> bound;       // [visited blocks x 16]: each row's score bound
  std::vector<float> est_scores;  // the coarse-estimate heap
  std::vector<int64_t> est_rows;
  std::vector<float> heap_scores;  // the exact heap
  std::vector<int32_t> cand;      // positions (in step 1's visit) step 3 reads
  std::vector<std::size_t> blk_row0;  // per visited block, its first row
  std::vector<int64_t> ids, next;  // the rows of the chunk being scored, and of the next
  std::vector<float> exact;
};

// Asks for rows ids[0:k) to be brought into cache: the rows a rescoring reads are
// scattered, and fetching them while the previous ones are scored hides the latency.
void prefetch_rows(const Int8Rows& r, const int64_t* ids, std::size_t k) {
  for (std::size_t t = 0; t < k; ++t) {
    const char* row = reinterpret_cast<const char*>(r.codes + static_cast<std::size_t>(ids[t]) * r.d);
    for (std::size_t o = 0; o < r.d; o += 64) __builtin_prefetch(row + o);
  }
}

// Exact scores of rows ids[0:k) offered to `heap` under their keys (keys[id]; with
// keys null, the row id itself).
void rescore(const int8_t* qi, float qs, const Int8Rows& r, const int64_t* keys, const int64_t* ids, std::size_t k,
             std::vector<float>& exact, TopN& heap) {
  if (k == 0) return;
  exact.resize(k);
  const int64_t ptr[2] = {0, static_cast<int64_t>(k)};
  int8_gather(qi, &qs, 1, r, ptr, ids, exact.data(), 1);
  for (std::size_t t = 0; t < k; ++t) heap.offer(exact[t], keys ? keys[ids[t]] : ids[t]);
}

// Rows [lo, hi) of the matrix: the whole matrix, or one probed IVF list.
struct Range {
  std::size_t lo, hi;
};

// One query's step (1): its coarse sums' correction and bound factors, the bounds of the
// blocks visited so far (s.bound, s.blk_row0) and the top-n heap of coarse estimates.
// Scalars only: a Visit lives in a std::vector (top_shared), whose storage need not have a
// vector register's alignment.
struct Visit {
  int32_t corr;  // 128 * sum(q): vpdpbusd's unsigned levels are level + 128
  float qn;      // |q|, rounded up
  float qs;      // the query's scale
  TopN est;
  float est_floor;
  std::size_t pb = 0;  // blocks visited so far
};

// Sets s up for query qi (scale qs) over `blocks` blocks of 16 rows: the query padded to
// dp in s.q, the bound and estimate buffers.
TS_COARSE_TARGET Visit begin_visit(const int8_t* qi, float qs, std::size_t d, std::size_t dp, std::size_t blocks,
                                   std::size_t n, Scratch& s) {
  s.q.assign(dp, 0);
  std::copy(qi, qi + d, s.q.begin());
  int64_t qsum = 0, qq = 0;
  for (std::size_t k = 0; k < d; ++k) {
    qsum += qi[k];
    qq += int64_t{qi[k]} * qi[k];
  }
  s.bound.resize(blocks * 16);
  s.blk_row0.resize(blocks);
  s.est_scores.resize(n);
  s.est_rows.resize(n);
  // Bound = |q| |c - c'|, rounded up twice over: each norm (sqrt_up) and their float
  // product (relative error <= 2^-24, covered by the factor), then up to an integer.
  Visit v{static_cast<int32_t>(128 * qsum), sqrt_up(static_cast<double>(qq)) * (1.0f + 0x1p-20f), qs,
          TopN(s.est_scores.data(), s.est_rows.data(), n), 0.0f};
  v.est_floor = v.est.floor();
  return v;
}

// Step (1) for the block of rows [j0, j0 + 16) whose coarse sums (plus 128 sum(q)) are
// `sums`, of which rows [lo, hi) are in the range: their bounds and estimates.
TS_COARSE_TARGET inline void visit_block(Visit& v, __m512i sums, std::size_t j0, std::size_t lo, std::size_t hi,
                                         const float* scales, const float* resid_norm, Scratch& s) {
  const __m512 none = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i coarse = _mm512_sub_epi32(sums, _mm512_set1_epi32(v.corr));
  const __m512 qn = _mm512_set1_ps(v.qn), qsv = _mm512_set1_ps(v.qs);
  const unsigned first = static_cast<unsigned>(std::max(lo, j0) - j0);
  const unsigned last = static_cast<unsigned>(std::min(hi, j0 + 16) - j0);
  const auto valid = static_cast<__mmask16>(((1u << last) - 1u) & ~((1u << first) - 1u));
  const __m512 sc = _mm512_maskz_loadu_ps(valid, scales + j0);
  const __m512 bf = _mm512_mul_ps(_mm512_loadu_ps(resid_norm + j0), qn);
  const __m512i bi = _mm512_cvt_roundps_epi32(bf, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  // float(acc) * q_scale * scale, as an exact score is made: monotone in acc.
  const __m512 ub = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(coarse, bi)), qsv), sc);
  // Lanes outside the range can never reach a floor (>= 0): -inf.
  _mm512_storeu_ps(s.bound.data() + v.pb * 16, _mm512_mask_mov_ps(none, valid, ub));
  s.blk_row0[v.pb] = j0;
  const __m512 e = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(coarse), qsv), sc);
  auto hits = static_cast<unsigned>(valid & _mm512_cmp_ps_mask(e, _mm512_set1_ps(v.est_floor), _CMP_GE_OQ));
  if (hits) {
    alignas(64) float est_buf[16];
    _mm512_store_ps(est_buf, e);
    for (; hits; hits &= hits - 1) {
      const int t = __builtin_ctz(hits);
      v.est.offer(est_buf[t], static_cast<int64_t>(v.pb * 16 + t));
    }
    v.est_floor = v.est.floor();
  }
  ++v.pb;
}

// Steps (2) and (3) of a query whose step (1) is `v` (blocks visited, bounds in s).
TS_COARSE_TARGET void finish_visit(const int8_t* qi, float qs, const Int8Rows& r, const int64_t* keys,
                                   std::size_t n, int64_t* out, int64_t* count, Visit& v, Scratch& s,
                                   const Int8Rows* src);

// The best n keys of the rows in `ranges` (disjoint), as int8_top over just those rows.
// Step (1) visits each range's blocks of 16 rows (a block may overhang its range: lanes
// outside it are masked off) and keeps their bounds by position in that visit; a block's
// first row is in s.blk_row0. `r` gives the rows' scales (and d); the int8 rows are read
// from `src`: `r` itself, or (indirect) another matrix whose row keys[j] is row j of `r`
// (an IVF reading its lists' rows from the field's own matrix), the key then being that row.
TS_COARSE_TARGET void top_one(const int8_t* qi, float qs, const Int8Rows& r, const Int8Coarse& c,
                              const int64_t* keys, const Range* ranges, std::size_t n_ranges, std::size_t n,
                              int64_t* out, int64_t* count, Scratch& s, const Int8Rows* src = nullptr) {
  const std::size_t dp = c.dp, row_bytes = dp / 2;
  std::size_t blocks = 0;
  for (std::size_t g = 0; g < n_ranges; ++g) {
    if (ranges[g].hi > ranges[g].lo) blocks += (ranges[g].hi + 15) / 16 - ranges[g].lo / 16;
  }
  Visit v = begin_visit(qi, qs, r.d, dp, blocks, n, s);
  // vpdpbusd multiplies unsigned by signed bytes: the table holds level + 128 (and
  // 128 * sum(q) comes off, exact). vpermb reads 6 index bits: the table repeats 4 times.
  alignas(64) uint8_t table[64];
  for (int i = 0; i < 64; ++i) table[i] = static_cast<uint8_t>(c.levels[i % 16] + 128);
  const __m512i lut = _mm512_load_si512(table);
  for (std::size_t g = 0; g < n_ranges; ++g) {
    const std::size_t lo = ranges[g].lo, hi = ranges[g].hi;
    if (hi <= lo) continue;  // an empty list (counted as no block above)
    for (std::size_t j0 = lo / 16 * 16; j0 < hi; j0 += 16) {
      const uint8_t* base = c.nibbles.data() + j0 * row_bytes;
      // Ask for the block kAhead blocks on: between searches other work evicts the codes
      // from L2, and from L3 this pass read at ~15 GB/s without it (a 2-core VM, loaded).
      if (j0 + kAhead * 16 < hi) {
        const char* ahead = reinterpret_cast<const char*>(base + kAhead * 16 * row_bytes);
        for (std::size_t o = 0; o < 16 * row_bytes; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
      }
      visit_block(v, coarse_sums(base, row_bytes, dp, s.q.data(), lut), j0, lo, hi, r.scales, c.resid_norm.data(),
                  s);
    }
  }
  finish_visit(qi, qs, r, keys, n, out, count, v, s, src);
}

// The levels (+ 128) of a block of 16 coarse rows, each row's dims in order at
// dec + t * dp: what coarse_sums reads through vpermb, decoded once for several queries.
TS_COARSE_TARGET inline void decode_block(const uint8_t* base, std::size_t row_bytes, std::size_t dp, __m512i lut,
                                          uint8_t* dec) {
  for (std::size_t t = 0; t < 16; ++t) {
    for (std::size_t b = 0; b < dp / 128; ++b) {
      const __m512i v = _mm512_loadu_si512(base + t * row_bytes + 64 * b);
      _mm512_storeu_si512(dec + t * dp + 128 * b, _mm512_permutexvar_epi8(v, lut));
      _mm512_storeu_si512(dec + t * dp + 128 * b + 64, _mm512_permutexvar_epi8(_mm512_srli_epi16(v, 4), lut));
    }
  }
}

// coarse_sums over a decoded block: the same integers (exact int32 sums in another order).
TS_COARSE_TARGET inline __m512i decoded_sums(const uint8_t* dec, std::size_t dp, const int8_t* q) {
  alignas(64) __m512i acc[16];
  for (std::size_t t = 0; t < 16; t += 4) {
    const uint8_t* r0 = dec + t * dp;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (std::size_t b = 0; b < dp / 64; ++b) {
      const __m512i qv = _mm512_loadu_si512(q + 64 * b);
      a0 = _mm512_dpbusd_epi32(a0, _mm512_loadu_si512(r0 + 64 * b), qv);
      a1 = _mm512_dpbusd_epi32(a1, _mm512_loadu_si512(r0 + dp + 64 * b), qv);
      a2 = _mm512_dpbusd_epi32(a2, _mm512_loadu_si512(r0 + 2 * dp + 64 * b), qv);
      a3 = _mm512_dpbusd_epi32(a3, _mm512_loadu_si512(r0 + 3 * dp + 64 * b), qv);
    }
    acc[t] = a0;
    acc[t + 1] = a1;
    acc[t + 2] = a2;
    acc[t + 3] = a3;
  }
  return reduce16(acc);
}

// int8_top_coarse's queries [i0, i1) over all rows, step (1) shared: each block of coarse
// rows is read and decoded once and summed against every query (the vpermb decoding was
// most of a query's step (1), and the block stays in L1 for the queries after the first);
// steps (2) and (3) per query, as top_one. The same result as top_one per query.
TS_COARSE_TARGET void top_shared(const int8_t* q, const float* q_scales, std::size_t i0, std::size_t i1,
                                 const Int8Rows& r, const Int8Coarse& c, const int64_t* keys, std::size_t n,
                                 int64_t* out, int64_t* counts, std::vector<Scratch>& ss) {
  const std::size_t d = r.d, dp = c.dp, row_bytes = dp / 2, m = i1 - i0;
  const std::size_t blocks = (r.n + 15) / 16;
  ss.resize(m);
  std::vector<Visit> visits;
  visits.reserve(m);
  for (std::size_t i = i0; i < i1; ++i) visits.push_back(begin_visit(q + i * d, q_scales[i], d, dp, blocks, n, ss[i - i0]));
  alignas(64) uint8_t table[64];
  for (int i = 0; i < 64; ++i) table[i] = static_cast<uint8_t>(c.levels[i % 16] + 128);
  const __m512i lut = _mm512_load_si512(table);
  std::vector<uint8_t> dec(16 * dp);
  for (std::size_t j0 = 0; j0 < r.n; j0 += 16) {
    const uint8_t* base = c.nibbles.data() + j0 * row_bytes;
    if (j0 + kAhead * 16 < r.n) {
      const char* ahead = reinterpret_cast<const char*>(base + kAhead * 16 * row_bytes);
      for (std::size_t o = 0; o < 16 * row_bytes; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
    }
    decode_block(base, row_bytes, dp, lut, dec.data());
    for (std::size_t i = 0; i < m; ++i) {
      Scratch& s = ss[i];
      visit_block(visits[i], decoded_sums(dec.data(), dp, s.q.data()), j0, 0, r.n, r.scales, c.resid_norm.data(), s);
    }
  }
  for (std::size_t i = i0; i < i1; ++i) {
    finish_visit(q + i * d, q_scales[i], r, keys, n, out + i * n, counts + i, visits[i - i0], ss[i - i0], nullptr);
  }
}

TS_COARSE_TARGET void finish_visit(const int8_t* qi, float qs, const Int8Rows& r, const int64_t* keys,
                                   std::size_t n, int64_t* out, int64_t* count, Visit& v, Scratch& s,
                                   const Int8Rows* src) {
  const std::size_t blocks = v.pb;
  TopN& est = v.est;
  // A position's matrix row (indirect: its row in src).
  const auto row_of = [&](std::size_t pos) {
    const auto j = static_cast<int64_t>(s.blk_row0[pos / 16] + pos % 16);
    return src ? keys[j] : j;
  };
  const Int8Rows& rows = src ? *src : r;
  const int64_t* row_keys = src ? nullptr : keys;

  // (2) The best rows by estimate, scored exactly: the floor starts near its final value.
  s.heap_scores.resize(n);
  TopN heap(s.heap_scores.data(), out, n);
  s.ids.clear();
  for (std::size_t t = 0; t < est.size(); ++t) {
    const auto pos = static_cast<std::size_t>(s.est_rows[t]);
    s.ids.push_back(row_of(pos));
    s.bound[pos] = -std::numeric_limits<float>::infinity();
  }
  prefetch_rows(rows, s.ids.data(), s.ids.size());
  rescore(qi, qs, rows, row_keys, s.ids.data(), s.ids.size(), s.exact, heap);

  // (3) Every other row whose bound reaches the floor (a row below it scores below the
  // n-th best kept so far, and the floor only rises).
  s.cand.resize(blocks * 16);
  std::size_t nc = 0;
  const __m512 floor = _mm512_set1_ps(heap.floor());
  const __m512i step = _mm512_set1_epi32(16);
  __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (std::size_t blk = 0; blk < blocks; ++blk, idx = _mm512_add_epi32(idx, step)) {
    const __mmask16 keep = _mm512_cmp_ps_mask(_mm512_loadu_ps(s.bound.data() + blk * 16), floor, _CMP_GE_OQ);
    _mm512_mask_compressstoreu_epi32(s.cand.data() + nc, keep, idx);
    nc += static_cast<std::size_t>(__builtin_popcount(keep));
  }
  // In chunks: each chunk's rows are fetched while the one before is scored, and the
  // floor, rising, drops rows before they are read.
  constexpr std::size_t kChunk = 16;
  s.ids.clear();
  s.next.clear();
  const auto take = [&](std::size_t a, std::vector<int64_t>& ids) {
    const float f = heap.floor();
    ids.clear();
    for (std::size_t t = a; t < std::min(nc, a + kChunk); ++t) {
      const auto pos = static_cast<std::size_t>(s.cand[t]);
      if (s.bound[pos] >= f) ids.push_back(row_of(pos));
    }
    prefetch_rows(rows, ids.data(), ids.size());
  };
  if (nc) take(0, s.ids);
  for (std::size_t a = 0; a < nc; a += kChunk) {
    if (a + kChunk < nc) take(a + kChunk, s.next);
    rescore(qi, qs, rows, row_keys, s.ids.data(), s.ids.size(), s.exact, heap);
    std::swap(s.ids, s.next);
  }
  heap.sort_best_first();
  *count = static_cast<int64_t>(heap.size());
}


// The prefiltered probe of every query row (int8_probe_top_coarse, int8_probe_top_rows):
// query i's probed lists as row ranges of `lists`, then top_one over them.
void probe_top_each(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
                    const Int8Coarse& coarse, const int64_t* list_ptr, const int64_t* list_ids,
                    const int64_t* probe_ptr, const int64_t* probes, std::size_t n, int64_t* out, int64_t* counts,
                    int threads, const Int8Rows* src) {
  parallel_chunks(m, threads, 1, [&](int, std::size_t i0, std::size_t i1) {
    Scratch s;
    std::vector<Range> ranges;
    for (std::size_t i = i0; i < i1; ++i) {
      ranges.clear();
      for (int64_t p = probe_ptr[i]; p < probe_ptr[i + 1]; ++p) {
        ranges.push_back({static_cast<std::size_t>(list_ptr[probes[p]]),
                          static_cast<std::size_t>(list_ptr[probes[p] + 1])});
      }
      top_one(q + i * lists.d, q_scales[i], lists, coarse, list_ids, ranges.data(), ranges.size(), n, out + i * n,
              counts + i, s, src);
    }
  });
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#undef TS_COARSE_TARGET

#endif  // TOOLSIFT_X86

}  // namespace

Int8Coarse int8_coarse_build(const Int8Rows& rows) { return int8_coarse_build_rows(rows, nullptr, rows.n); }

Int8Coarse int8_coarse_build_rows(const Int8Rows& matrix, const int64_t* take, std::size_t n_rows) {
  // Row j of the prefilter: matrix row take[j] (take null: row j).
  const Int8Rows rows{matrix.codes, matrix.scales, n_rows, matrix.d};
  const auto row_codes = [&](std::size_t j) {
    return matrix.codes + static_cast<std::size_t>(take ? take[j] : static_cast<int64_t>(j)) * matrix.d;
  };
  Int8Coarse c;
  c.n = rows.n;
  c.d = rows.d;
  c.dp = (rows.d + 127) / 128 * 128;
  std::array<uint64_t, 256> hist{};
  for (std::size_t j = 0; j < rows.n; ++j) {
    const int8_t* row = row_codes(j);
    for (std::size_t k = 0; k < rows.d; ++k) ++hist[static_cast<uint8_t>(row[k] + 128)];
  }
  const std::array<int8_t, 16> lv = fit_levels(hist);
  std::copy(lv.begin(), lv.end(), c.levels);
  std::array<uint8_t, 256> nearest{};  // code + 128 -> level index (ties to the lower)
  for (int v = 0; v < 256; ++v) {
    int best = 0;
    for (int i = 1; i < 16; ++i) best = std::abs(v - 128 - lv[i]) < std::abs(v - 128 - lv[best]) ? i : best;
    nearest[v] = static_cast<uint8_t>(best);
  }
  const std::size_t padded = (rows.n + 15) / 16 * 16, row_bytes = c.dp / 2;
  c.nibbles.assign(padded * row_bytes, 0);
  c.resid_norm.assign(padded, 0.0f);
  for (std::size_t j = 0; j < rows.n; ++j) {
    const int8_t* row = row_codes(j);
    uint8_t* dst = c.nibbles.data() + j * row_bytes;
    int64_t rr = 0;
    for (std::size_t k = 0; k < rows.d; ++k) {
      const uint8_t i = nearest[static_cast<uint8_t>(row[k] + 128)];
      const int64_t e = int64_t{row[k]} - lv[i];
      rr += e * e;
      const std::size_t b = k / 128, o = k % 128;
      dst[64 * b + o % 64] |= static_cast<uint8_t>(o < 64 ? i : i << 4);
    }
    c.resid_norm[j] = sqrt_up(static_cast<double>(rr));
  }
  return c;
}

bool int8_coarse_supported() {
#ifdef TOOLSIFT_X86
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi");
  }();
  return ok;
#else
  return false;
#endif
}

void int8_top_coarse(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                     const Int8Coarse& coarse, const int64_t* keys, std::size_t n, int64_t* out, int64_t* counts,
                     int threads) {
#ifdef TOOLSIFT_X86
  if (int8_coarse_supported() && rows.d > 0 && rows.d <= kCoarseMaxDim && coarse.n == rows.n &&
      coarse.d == rows.d && n > 0) {
    parallel_chunks(m, threads, 1, [&](int, std::size_t i0, std::size_t i1) {
      if (i1 - i0 > 1) {  // several queries: step (1) shared (top_shared)
        std::vector<Scratch> ss;
        top_shared(q, q_scales, i0, i1, rows, coarse, keys, n, out, counts, ss);
        return;
      }
      Scratch s;
      const Range all{0, rows.n};
      top_one(q + i0 * rows.d, q_scales[i0], rows, coarse, keys, &all, 1, n, out + i0 * n, counts + i0, s);
    });
    return;
  }
#endif
  int8_top(q, q_scales, m, rows, keys, n, out, counts, threads);
}

void int8_probe_top_coarse(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
                           const Int8Coarse& coarse, const int64_t* list_ptr, const int64_t* list_ids,
                           const int64_t* probe_ptr, const int64_t* probes, std::size_t n, int64_t* out,
                           int64_t* counts, int threads) {
#ifdef TOOLSIFT_X86
  if (int8_coarse_supported() && lists.d > 0 && lists.d <= kCoarseMaxDim && coarse.n == lists.n &&
      coarse.d == lists.d && n > 0) {
    probe_top_each(q, q_scales, m, lists, coarse, list_ptr, list_ids, probe_ptr, probes, n, out, counts, threads,
                   nullptr);
    return;
  }
#endif
  int8_probe_top(q, q_scales, m, lists, list_ptr, list_ids, probe_ptr, probes, n, out, counts, threads);
}

void int8_probe_top_rows(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& matrix,
                         const float* list_scales, const Int8Coarse& coarse, const int64_t* list_ptr,
                         const int64_t* list_ids, std::size_t n_listed, const int64_t* probe_ptr,
                         const int64_t* probes, std::size_t n, int64_t* out, int64_t* counts, int threads) {
  // The listed rows in list order: their scales (the int8 rows are read through list_ids).
  [[maybe_unused]] const Int8Rows lists{nullptr, list_scales, n_listed, matrix.d};
#ifdef TOOLSIFT_X86
  if (int8_coarse_supported() && matrix.d > 0 && matrix.d <= kCoarseMaxDim && coarse.n == n_listed &&
      coarse.d == matrix.d && n > 0) {
    probe_top_each(q, q_scales, m, lists, coarse, list_ptr, list_ids, probe_ptr, probes, n, out, counts, threads,
                   &matrix);
    return;
  }
#endif
  // Without the prefilter's instructions: every probed row, read through list_ids (the
  // same kept set: TopN's rule does not depend on the order rows arrive in).
  parallel_chunks(m, threads, 1, [&](int, std::size_t i0, std::size_t i1) {
    std::vector<float> exact, heap_scores(n);
    for (std::size_t i = i0; i < i1; ++i) {
      TopN heap(heap_scores.data(), out + i * n, n);
      for (int64_t p = probe_ptr[i]; p < probe_ptr[i + 1]; ++p) {
        const int64_t lo = list_ptr[probes[p]], hi = list_ptr[probes[p] + 1];
        exact.resize(static_cast<std::size_t>(hi - lo));
        const int64_t ptr[2] = {0, hi - lo};
        int8_gather(q + i * matrix.d, q_scales + i, 1, matrix, ptr, list_ids + lo, exact.data(), 1);
        for (int64_t t = lo; t < hi; ++t) heap.offer(exact[static_cast<std::size_t>(t - lo)], list_ids[t]);
      }
      heap.sort_best_first();
      counts[i] = static_cast<int64_t>(heap.size());
    }
  });
}

}  // namespace toolsift
