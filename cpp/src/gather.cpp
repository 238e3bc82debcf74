// Scores of query texts against given candidate ids, at the cost of the postings.
//
// Per term, the cheaper of two exact strategies: scan its postings and add into the
// candidates' slots through a pooled doc -> slot map, or (when the candidates are few
// against a long list) gallop each candidate document into the sorted posting list.
// Either way each candidate document receives its weights in query-term order starting
// from 0, exactly like score_dense's accumulator, so the floats are identical.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "scoring_detail.h"
#include "toolsift/inverted_index.h"
#include "toolsift/parallel.h"

namespace toolsift {
using detail::fail;

namespace {

std::vector<int64_t> text_ranges(const TextQueries& tq, std::size_t n_texts) {
  std::vector<int64_t> ptr(tq.n_queries + 1, 0);
  for (std::size_t i = 0; i < n_texts; ++i) ++ptr[static_cast<std::size_t>(tq.text_query[i]) + 1];
  for (std::size_t q = 0; q < tq.n_queries; ++q) ptr[q + 1] += ptr[q];
  return ptr;
}

inline int ceil_log2(int64_t x) {
  int r = 0;
  while ((int64_t{1} << r) < x) ++r;
  return r;
}

}  // namespace

void InvertedIndex::check_text_queries(const TextQueries& tq, std::size_t n_texts) {
  const auto nq = static_cast<int64_t>(tq.n_queries);
  for (std::size_t i = 0; i < n_texts; ++i) {
    const int64_t v = tq.text_query[i];
    if (v < 0 || v >= nq) {
      fail("text_query[" + std::to_string(i) + "]=" + std::to_string(v) + " outside [0, n_queries=" + std::to_string(nq) + ")");
    }
    if (i > 0 && v < tq.text_query[i - 1]) fail("text_query decreases at position " + std::to_string(i) + " (must be nondecreasing)");
  }
}

void InvertedIndex::check_candidates(const CandidateSet& c, std::size_t n_queries, std::size_t n_ids, bool group) const {
  if (c.ptr[0] != 0) fail("cand_ptr[0] must be 0, got " + std::to_string(c.ptr[0]));
  for (std::size_t q = 0; q < n_queries; ++q) {
    if (c.ptr[q + 1] < c.ptr[q]) fail("cand_ptr decreases at query " + std::to_string(q));
  }
  if (static_cast<std::size_t>(c.ptr[n_queries]) != n_ids) {
    fail("cand_ptr[-1]=" + std::to_string(c.ptr[n_queries]) + " but cand_ids has " + std::to_string(n_ids) + " entries");
  }
  const auto width = static_cast<int64_t>(out_width(group));
  for (std::size_t q = 0; q < n_queries; ++q) {
    for (int64_t j = c.ptr[q]; j < c.ptr[q + 1]; ++j) {
      const int64_t id = c.ids[j];
      if (id < 0 || id >= width) {
        fail("cand_ids[" + std::to_string(j) + "]=" + std::to_string(id) + " outside [0, " + std::to_string(width) + ") (" +
             (group ? "groups" : "documents") + ")");
      }
      if (j > c.ptr[q] && id <= c.ids[j - 1]) {
        fail("cand_ids of query " + std::to_string(q) + " are not strictly increasing at position " + std::to_string(j));
      }
    }
  }
}

std::vector<int64_t> InvertedIndex::gather_offsets(std::size_t n_texts, const TextQueries& tq, const CandidateSet& c) {
  std::vector<int64_t> off(n_texts + 1, 0);
  for (std::size_t i = 0; i < n_texts; ++i) {
    const auto q = static_cast<std::size_t>(tq.text_query[i]);
    off[i + 1] = off[i] + (c.ptr[q + 1] - c.ptr[q]);
  }
  return off;
}

void InvertedIndex::gather_query(const QueryBatch& q, int64_t t0, int64_t t1, const int64_t* cands, std::size_t nc,
                                 Scale scale, bool group, Scratch& s, std::vector<int32_t>& slot_docs,
                                 std::vector<int32_t>& slot_ptr, std::vector<float>& sacc, float* out) const {
  const bool use_groups = group && grouped_;
  // Slots: the candidate documents (a group candidate owns the slots of its documents).
  slot_docs.clear();
  slot_ptr.assign(1, 0);
  for (std::size_t k = 0; k < nc; ++k) {
    if (use_groups) {
      const int64_t g = cands[k];
      for (int64_t j = group_ptr_[g]; j < group_ptr_[g + 1]; ++j) {
        slot_docs.push_back(groups_contiguous_ ? static_cast<int32_t>(j) : group_docs_[j]);
      }
    } else {
      slot_docs.push_back(static_cast<int32_t>(cands[k]));
    }
    slot_ptr.push_back(static_cast<int32_t>(slot_docs.size()));
  }
  const std::size_t ns = slot_docs.size();
  // Galloping needs the slot documents ascending; they are unless groups interleave.
  std::vector<std::pair<int32_t, int32_t>> sorted;
  const bool need_sort = use_groups && !groups_contiguous_;
  if (need_sort) {
    sorted.reserve(ns);
    for (std::size_t i = 0; i < ns; ++i) sorted.emplace_back(slot_docs[i], static_cast<int32_t>(i));
    std::sort(sorted.begin(), sorted.end());
  }
  const int64_t* ip = cols_.indptr.data();
  const int32_t* docs = cols_.doc_ids.data();
  const float* w = weight_.data();
  bool slots_mapped = false;
  int32_t* slot = nullptr;
  for (int64_t t = t0; t < t1; ++t) {
    const int32_t* terms = q.terms + q.offsets[t];
    const auto m = static_cast<std::size_t>(q.offsets[t + 1] - q.offsets[t]);
    sacc.assign(ns, 0.0f);
    for (std::size_t i = 0; i < m && ns > 0; ++i) {
      const int32_t term = terms[i];
      if (term < 0) continue;
      const int64_t lo = ip[term], hi = ip[term + 1], df = hi - lo;
      if (df == 0) continue;
      if (static_cast<int64_t>(ns) * ceil_log2(df + 1) < df) {
        int64_t j = lo;
        for (std::size_t r = 0; r < ns && j < hi; ++r) {
          const int32_t d = need_sort ? sorted[r].first : slot_docs[r];
          j = detail::gallop(docs, j, hi, d);
          if (j < hi && docs[j] == d) sacc[need_sort ? static_cast<std::size_t>(sorted[r].second) : r] += w[j];
        }
      } else {
        if (!slots_mapped) {
          s.need_slots(n_docs());
          slot = s.slot.data();
          for (std::size_t r = 0; r < ns; ++r) slot[slot_docs[r]] = static_cast<int32_t>(r);
          slots_mapped = true;
        }
        for (int64_t j = lo; j < hi; ++j) {
          const int32_t r = slot[docs[j]];
          if (r >= 0) sacc[static_cast<std::size_t>(r)] += w[j];
        }
      }
    }
    const detail::Scaler f(scale, upper_bound(terms, m), params_.k1);
    float* row = out + (t - t0) * static_cast<int64_t>(nc);
    for (std::size_t k = 0; k < nc; ++k) {
      float v = 0.0f;
      for (int32_t r = slot_ptr[k]; r < slot_ptr[k + 1]; ++r) v = std::max(v, sacc[static_cast<std::size_t>(r)]);
      row[k] = f(v);
    }
  }
  if (slots_mapped) {
    for (std::size_t r = 0; r < ns; ++r) slot[slot_docs[r]] = -1;
  }
}

void InvertedIndex::gather(const QueryBatch& q, const TextQueries& tq, const CandidateSet& c, Scale scale, bool group,
                           const int64_t* offsets, float* out, int threads) const {
  const std::vector<int64_t> text_ptr = text_ranges(tq, q.n_queries);
  parallel_chunks(tq.n_queries, threads, detail::kMinQueriesPerThread, [&](int, std::size_t lo, std::size_t hi) {
    auto lease = pool_->acquire();
    lease.begin();
    std::vector<int32_t> slot_docs, slot_ptr;
    std::vector<float> sacc;
    for (std::size_t qi = lo; qi < hi; ++qi) {
      const int64_t t0 = text_ptr[qi], t1 = text_ptr[qi + 1];
      if (t0 == t1) continue;
      const int64_t c0 = c.ptr[qi];
      gather_query(q, t0, t1, c.ids + c0, static_cast<std::size_t>(c.ptr[qi + 1] - c0), scale, group, *lease,
                   slot_docs, slot_ptr, sacc, out + offsets[t0]);
    }
    lease.done();
  });
}

void InvertedIndex::gather_texts(const QueryBatch& q, int64_t t0, int64_t t1, const int64_t* ids, std::size_t nc,
                                 Scale scale, bool group, float* out) const {
  if (t0 >= t1) return;
  thread_local std::vector<int32_t> slot_docs, slot_ptr;
  thread_local std::vector<float> sacc;
  auto lease = pool_->acquire();
  lease.begin();
  gather_query(q, t0, t1, ids, nc, scale, group, *lease, slot_docs, slot_ptr, sacc, out);
  lease.done();
}

}  // namespace toolsift
