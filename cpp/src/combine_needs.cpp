// toolsift/combine_needs.h: the float64 arithmetic and orders of the NumPy twin
// (toolsift.search.needs_reference.combine_needs_reference), step by step.
#include "toolsift/combine_needs.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

namespace toolsift {

namespace {

// A float32's bits as an integer that is monotone in its value (-0 and +0 both 0).
int64_t ordered_key(float v) {
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits >= 0 ? int64_t{bits} : -int64_t{bits & 0x7FFFFFFF};
}

float from_key(int64_t key) {
  const auto bits = static_cast<uint32_t>(key >= 0 ? key : ((-key) | int64_t{0x80000000}));
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

}  // namespace

void combine_needs(const float* block, std::size_t n, std::size_t m, float* out, int64_t* chosen) {
  if (m == 0 || n == 0) return;
  thread_local std::vector<double> top, best;
  thread_local std::vector<int64_t> min_rank, pick;
  thread_local std::vector<uint32_t> by, order;
  // Each reading's best, and the best of all.
  top.resize(n);
  double top_all = -std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < n; ++r) {
    double t = block[r * m];
    for (std::size_t i = 1; i < m; ++i) t = std::max(t, static_cast<double>(block[r * m + i]));
    top[r] = t;
    top_all = std::max(top_all, t);
  }
  // Per candidate its best shifted score and the first reading giving it.
  best.resize(m);
  pick.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    double b = static_cast<double>(block[i]) - top[0] + top_all;
    int64_t at = 0;
    for (std::size_t r = 1; r < n; ++r) {
      const double s = static_cast<double>(block[r * m + i]) - top[r] + top_all;
      if (s > b) {
        b = s;
        at = static_cast<int64_t>(r);
      }
    }
    best[i] = b;
    pick[i] = at;
  }
  // Per candidate its best rank in any reading's ranking (score descending, ties to the
  // lower index: a stable sort of -score).
  min_rank.assign(m, std::numeric_limits<int64_t>::max());
  by.resize(m);
  for (std::size_t r = 0; r < n; ++r) {
    const float* row = block + r * m;
    std::iota(by.begin(), by.end(), 0u);
    std::stable_sort(by.begin(), by.end(), [row](uint32_t a, uint32_t b) { return row[a] > row[b]; });
    for (std::size_t p = 0; p < m; ++p) min_rank[by[p]] = std::min(min_rank[by[p]], static_cast<int64_t>(p));
  }
  order.resize(m);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (min_rank[a] != min_rank[b]) return min_rank[a] < min_rank[b];
    if (best[a] != best[b]) return best[a] > best[b];
    const double a0 = block[a], b0 = block[b];
    if (a0 != b0) return a0 > b0;
    return a < b;
  });
  // Strictly decreasing along the order: key[p] = min(key, key[p-1] - 1), floored at -inf.
  const int64_t floor = ordered_key(-std::numeric_limits<float>::infinity());
  int64_t run = std::numeric_limits<int64_t>::max();  // min over p' <= p of key[p'] + p'
  for (std::size_t p = 0; p < m; ++p) {
    const auto pp = static_cast<int64_t>(p);
    run = std::min(run, ordered_key(static_cast<float>(best[order[p]])) + pp);
    out[order[p]] = from_key(std::max(run - pp, floor));
  }
  if (chosen != nullptr) std::copy(pick.begin(), pick.end(), chosen);
}

}  // namespace toolsift
