// A text's raw BM25 sums as one dense row (InvertedIndex::sum_text and friends): the
// fused search's path for small fields, where one pass over the postings serves both the
// text's top-n and every candidate's score (top_one and gather each read the postings).
// Exact: a document's weights are added in query-term order from 0, as in score_dense,
// and the top-n selection keeps the same ids as top_exhaustive (see below).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "scoring_detail.h"
#include "toolsift/inverted_index.h"

namespace toolsift {

void InvertedIndex::sum_text(const int32_t* terms, std::size_t m, float* acc, std::vector<int32_t>& touched) const {
  const int64_t* ip = cols_.indptr.data();
  const int32_t* docs = cols_.doc_ids.data();
  const float* w = weight_.data();
  for (std::size_t i = 0; i < m; ++i) {
    const int32_t t = terms[i];
    // Out-of-vocabulary tokens and all-zero terms (ATIRE idf 0) add nothing.
    if (t < 0 || max_weight_[t] == 0.0f) continue;
    for (int64_t j = ip[t], e = ip[t + 1]; j < e; ++j) {
      const int32_t d = docs[j];
      if (acc[d] == 0.0f) touched.push_back(d);
      acc[d] += w[j];
    }
  }
}

void InvertedIndex::clear_sums(float* acc, std::vector<int32_t>& touched) noexcept {
  for (const int32_t d : touched) acc[d] = 0.0f;
  touched.clear();
}

float InvertedIndex::group_sum(const float* acc, int64_t g) const noexcept {
  if (!grouped_) return std::max(0.0f, acc[g]);
  float v = 0.0f;
  for (int64_t j = group_ptr_[g]; j < group_ptr_[g + 1]; ++j) {
    v = std::max(v, acc[groups_contiguous_ ? j : group_docs_[static_cast<std::size_t>(j)]]);
  }
  return v;
}

void InvertedIndex::top_from_sums(const float* acc, const std::vector<int32_t>& touched, const int32_t* terms,
                                  std::size_t m, std::size_t n, Scale scale, bool group, float* best,
                                  std::vector<int64_t>& ids) const {
  const detail::Scaler f(scale, upper_bound(terms, m), params_.k1);
  if (n == 0 || f.all_zero()) return;
  thread_local std::vector<std::pair<float, int64_t>> raw;  // (raw score, id)
  raw.clear();
  if (group && grouped_) {
    const int32_t* dg = cols_.doc_group.data();
    thread_local std::vector<int32_t> tg;
    tg.clear();
    for (const int32_t d : touched) {
      const int32_t g = dg[d];
      if (best[g] == 0.0f) tg.push_back(g);
      best[g] = std::max(best[g], acc[d]);
    }
    for (const int32_t g : tg) {
      raw.emplace_back(best[g], g);
      best[g] = 0.0f;
    }
  } else {
    for (const int32_t d : touched) raw.emplace_back(acc[d], d);
  }
  if (raw.size() <= n) {
    // Every id with a positive scaled score is in; f is nondecreasing, so when the lowest
    // raw score scales above 0 they all do (the usual case: one expm1, not one per id).
    const auto low = std::min_element(raw.begin(), raw.end());
    if (low == raw.end()) return;
    if (f(low->first) > 0.0f) {
      for (const auto& h : raw) ids.push_back(h.second);
      return;
    }
  }
  // The n best by scaled score (ties: lower id) are among the ids whose raw score reaches
  // raw_floor(f(n-th best raw)): f is nondecreasing, so the n largest raw scores all scale
  // to at least that bar, and a raw score below the floor scales below it.
  if (raw.size() > n) {
    std::nth_element(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(n - 1), raw.end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    const float bar = f(raw[n - 1].first);
    if (bar > 0.0f) {
      const float floor = f.raw_floor(bar);
      raw.erase(std::remove_if(raw.begin(), raw.end(), [&](const auto& h) { return h.first < floor; }), raw.end());
    }
  }
  for (auto& h : raw) h.first = f(h.first);
  raw.erase(std::remove_if(raw.begin(), raw.end(), [](const auto& h) { return !(h.first > 0.0f); }), raw.end());
  const auto better = [](const auto& x, const auto& y) {
    return x.first > y.first || (x.first == y.first && x.second < y.second);
  };
  if (raw.size() > n) {
    std::nth_element(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(n), raw.end(), better);
    raw.resize(n);
  }
  for (const auto& h : raw) ids.push_back(h.second);
}

}  // namespace toolsift
