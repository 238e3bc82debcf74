// toolsift/combine_needs.h: the float64 arithmetic and orders of the NumPy twin
// (toolsift.search.needs_reference.combine_needs_reference), step by step.
#include "toolsift/combine_needs.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace toolsift {

namespace {

// A float32's bits as an integer that is monotone in its value (-0 and +0 both 0).
int64_t ordered_key(float v) {
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits >= 0 ? int64_t{bits} : -int64_t{bits & 0x7FFFFFFF};
}

// A float32 (not NaN) as a uint32 that sorts descending by value (-0 as +0).
uint32_t descending_key(float v) {
  if (v == 0.0f) v = 0.0f;
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const uint32_t ascending = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return ~ascending;
}

float from_key(int64_t key) {
  const auto bits = static_cast<uint32_t>(key >= 0 ? key : ((-key) | int64_t{0x80000000}));
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

struct Work {
  std::vector<double> top, best;
  std::vector<int64_t> pick;
  std::vector<uint32_t> min_rank;
  std::vector<uint64_t> keys;
  std::vector<uint32_t> order, start, fill;
};

constexpr uint32_t kUnranked = std::numeric_limits<uint32_t>::max();

// The first `len` places of the order (w.order; every candidate when len == m) and their
// scores: each candidate's best shifted score (w.best, w.pick), its best rank among each
// reading's first `len` places, the rounds, and the cap along the order. A candidate whose
// best rank is `len` or more comes after every one ranked within it, so the first `len`
// places need only each reading's first `len` (there are at least `len` such candidates:
// reading 0's). Returns how many places were ordered (>= len).
std::size_t order_first(const float* block, std::size_t n, std::size_t m, std::size_t len, Work& w) {
  // Each reading's best, and the best of all.
  w.top.resize(n);
  double top_all = -std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < n; ++r) {
    double t = block[r * m];
    for (std::size_t i = 1; i < m; ++i) t = std::max(t, static_cast<double>(block[r * m + i]));
    w.top[r] = t;
    top_all = std::max(top_all, t);
  }
  // Per candidate its best shifted score and the first reading giving it.
  w.best.resize(m);
  w.pick.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    double b = static_cast<double>(block[i]) - w.top[0] + top_all;
    int64_t at = 0;
    for (std::size_t r = 1; r < n; ++r) {
      const double s = static_cast<double>(block[r * m + i]) - w.top[r] + top_all;
      if (s > b) {
        b = s;
        at = static_cast<int64_t>(r);
      }
    }
    w.best[i] = b;
    w.pick[i] = at;
  }
  // Per candidate its best rank in any reading's ranking (score descending, ties to the
  // lower index, as a stable sort of -score): each reading's (score, index) pairs sorted
  // as integers, the score's bits made monotone (-0 as +0).
  w.min_rank.assign(m, kUnranked);
  w.keys.resize(m);
  for (std::size_t r = 0; r < n; ++r) {
    const float* row = block + r * m;
    for (std::size_t i = 0; i < m; ++i) w.keys[i] = (uint64_t{descending_key(row[i])} << 32) | i;
    if (len < m) {
      std::partial_sort(w.keys.begin(), w.keys.begin() + static_cast<std::ptrdiff_t>(len), w.keys.end());
    } else {
      std::sort(w.keys.begin(), w.keys.end());
    }
    for (std::size_t p = 0; p < len; ++p) {
      const auto i = static_cast<std::size_t>(w.keys[p] & 0xFFFFFFFFu);
      w.min_rank[i] = std::min(w.min_rank[i], static_cast<uint32_t>(p));
    }
  }
  // The order: by best rank (a counting sort; each round holds at most one candidate per
  // reading), within a round by shifted score, reading 0's score, index (descending,
  // descending, ascending).
  w.start.assign(len + 1, 0);
  for (std::size_t i = 0; i < m; ++i) {
    if (w.min_rank[i] != kUnranked) ++w.start[w.min_rank[i] + 1];
  }
  for (std::size_t p = 0; p < len; ++p) w.start[p + 1] += w.start[p];
  const std::size_t ranked = w.start[len];
  w.order.resize(ranked);
  w.fill.assign(w.start.begin(), w.start.end() - 1);
  for (std::size_t i = 0; i < m; ++i) {
    if (w.min_rank[i] != kUnranked) w.order[w.fill[w.min_rank[i]]++] = static_cast<uint32_t>(i);
  }
  const auto before = [&](uint32_t a, uint32_t b) {
    if (w.best[a] != w.best[b]) return w.best[a] > w.best[b];
    const double a0 = block[a], b0 = block[b];
    if (a0 != b0) return a0 > b0;
    return a < b;
  };
  for (std::size_t p = 0; p < len; ++p) {
    const std::size_t lo = w.start[p], hi = w.start[p + 1];
    for (std::size_t x = lo + 1; x < hi; ++x) {  // insertion sort of a round (a few entries)
      const uint32_t v = w.order[x];
      std::size_t y = x;
      for (; y > lo && before(v, w.order[y - 1]); --y) w.order[y] = w.order[y - 1];
      w.order[y] = v;
    }
  }
  return ranked;
}

// The scores of the first `len` places: strictly decreasing along the order, key[p] =
// min(key, key[p-1] - 1), floored at -inf; score[p] is place p's.
void cap(const Work& w, std::size_t len, float* score) {
  const int64_t floor = ordered_key(-std::numeric_limits<float>::infinity());
  int64_t run = std::numeric_limits<int64_t>::max();  // min over p' <= p of key[p'] + p'
  for (std::size_t p = 0; p < len; ++p) {
    const auto pp = static_cast<int64_t>(p);
    run = std::min(run, ordered_key(static_cast<float>(w.best[w.order[p]])) + pp);
    score[p] = from_key(std::max(run - pp, floor));
  }
}

thread_local Work work;

}  // namespace

void combine_needs(const float* block, std::size_t n, std::size_t m, float* out, int64_t* chosen) {
  if (m == 0 || n == 0) return;
  Work& w = work;
  order_first(block, n, m, m, w);
  thread_local std::vector<float> placed;
  placed.resize(m);
  cap(w, m, placed.data());
  for (std::size_t p = 0; p < m; ++p) out[w.order[p]] = placed[p];
  if (chosen != nullptr) std::copy(w.pick.begin(), w.pick.end(), chosen);
}

std::size_t combine_needs_top(const float* block, std::size_t n, std::size_t m, std::size_t k, int64_t* idx,
                              float* score, int64_t* chosen) {
  if (m == 0 || n == 0 || k == 0) return 0;
  const std::size_t len = std::min(k, m);
  Work& w = work;
  order_first(block, n, m, len, w);
  cap(w, len, score);
  if (len < m && score[len - 1] == -std::numeric_limits<float>::infinity()) {
    // Capped down to -inf: places after len tie with it and the index decides, so the
    // whole order is needed (scores this low do not come out of MFTR).
    thread_local std::vector<float> all;
    thread_local std::vector<uint32_t> by;
    all.resize(m);
    combine_needs(block, n, m, all.data(), nullptr);
    by.resize(m);
    for (std::size_t i = 0; i < m; ++i) by[i] = static_cast<uint32_t>(i);
    std::partial_sort(by.begin(), by.begin() + static_cast<std::ptrdiff_t>(len), by.end(),
                      [&](uint32_t a, uint32_t b) { return all[a] > all[b] || (all[a] == all[b] && a < b); });
    for (std::size_t p = 0; p < len; ++p) {
      idx[p] = by[p];
      score[p] = all[by[p]];
    }
  } else {
    for (std::size_t p = 0; p < len; ++p) idx[p] = w.order[p];
  }
  if (chosen != nullptr) {  // w.pick holds every candidate's reading either way
    for (std::size_t p = 0; p < len; ++p) chosen[p] = w.pick[static_cast<std::size_t>(idx[p])];
  }
  return len;
}

}  // namespace toolsift
