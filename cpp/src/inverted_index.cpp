#include "toolsift/inverted_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "scoring_detail.h"
#include "toolsift/parallel.h"

namespace toolsift {
using detail::fail;
using detail::kMinQueriesPerThread;

void check_doc_count(std::size_t n_docs, const char* what) {
  constexpr auto kMax = static_cast<std::size_t>(std::numeric_limits<int32_t>::max());
  if (n_docs > kMax) {
    fail(std::string(what) + ": " + std::to_string(n_docs) + " documents; at most " + std::to_string(kMax) +
         " fit int32 document ids");
  }
}

InvertedIndex InvertedIndex::build(const int32_t* tokens, const int64_t* offsets, std::size_t n_docs,
                                   int32_t n_terms, const int32_t* doc_group, bool grouped,
                                   int32_t n_groups, const Bm25Params& params) {
  params.validate();
  if (n_terms < 0) fail("n_terms must be >= 0");
  if (offsets == nullptr) fail("offsets must not be null");
  check_doc_count(n_docs, "offsets");
  if (offsets[0] != 0) fail("offsets[0] must be 0");
  for (std::size_t d = 0; d < n_docs; ++d) {
    if (offsets[d + 1] < offsets[d]) fail("offsets must be non-decreasing (at doc " + std::to_string(d) + ")");
    if (offsets[d + 1] - offsets[d] > std::numeric_limits<int32_t>::max()) {
      fail("document " + std::to_string(d) + " has more tokens than an int32 length holds");
    }
  }
  const int64_t n_tokens = offsets[n_docs];
  std::vector<int64_t> df_count(static_cast<std::size_t>(n_terms) + 1, 0);
  std::vector<int32_t> doc_len(n_docs, 0);
  for (std::size_t d = 0; d < n_docs; ++d) {
    doc_len[d] = static_cast<int32_t>(offsets[d + 1] - offsets[d]);
  }
  for (int64_t i = 0; i < n_tokens; ++i) {
    const int32_t t = tokens[i];
    if (t < 0 || t >= n_terms) fail("token id " + std::to_string(t) + " at position " + std::to_string(i) + " is outside [0, n_terms)");
  }

  // Count distinct (term, doc) pairs per term with a per-term "last doc seen" marker, so
  // a term repeated in one document is one posting with tf > 1.
  std::vector<int32_t> last_doc(static_cast<std::size_t>(n_terms), -1);
  for (std::size_t d = 0; d < n_docs; ++d) {
    for (int64_t i = offsets[d]; i < offsets[d + 1]; ++i) {
      const int32_t t = tokens[i];
      if (last_doc[t] != static_cast<int32_t>(d)) {
        last_doc[t] = static_cast<int32_t>(d);
        ++df_count[t + 1];
      }
    }
  }
  std::vector<int64_t> indptr(static_cast<std::size_t>(n_terms) + 1, 0);
  for (int32_t t = 0; t < n_terms; ++t) indptr[t + 1] = indptr[t] + df_count[t + 1];
  const std::size_t nnz = static_cast<std::size_t>(indptr[n_terms]);
  std::vector<int32_t> doc_ids(nnz);
  std::vector<int32_t> tfs(nnz, 0);
  std::vector<int64_t> cursor(indptr.begin(), indptr.end() - 1);
  std::fill(last_doc.begin(), last_doc.end(), -1);
  // Documents are visited in order, so each term's postings come out sorted by doc id.
  for (std::size_t d = 0; d < n_docs; ++d) {
    for (int64_t i = offsets[d]; i < offsets[d + 1]; ++i) {
      const int32_t t = tokens[i];
      if (last_doc[t] != static_cast<int32_t>(d)) {
        last_doc[t] = static_cast<int32_t>(d);
        doc_ids[cursor[t]] = static_cast<int32_t>(d);
        tfs[cursor[t]] = 1;
        ++cursor[t];
      } else {
        ++tfs[cursor[t] - 1];
      }
    }
  }
  IndexColumns cols;
  cols.indptr = Column<int64_t>::owned(std::move(indptr));
  cols.doc_ids = Column<int32_t>::owned(std::move(doc_ids));
  cols.tfs = Column<int32_t>::owned(std::move(tfs));
  cols.doc_len = Column<int32_t>::owned(std::move(doc_len));
  if (grouped) {
    if (doc_group == nullptr && n_docs > 0) fail("grouped index needs doc_group");
    cols.doc_group = Column<int32_t>::owned(n_docs ? std::vector<int32_t>(doc_group, doc_group + n_docs) : std::vector<int32_t>());
  }
  return from_columns(std::move(cols), grouped, grouped ? n_groups : static_cast<int32_t>(n_docs), params);
}

InvertedIndex InvertedIndex::from_columns(IndexColumns cols, bool grouped, int32_t n_groups,
                                          const Bm25Params& params) {
  params.validate();
  const auto& ip = cols.indptr;
  if (ip.empty()) fail("indptr must have at least one element");
  if (ip[0] != 0) fail("indptr[0] must be 0");
  for (std::size_t t = 0; t + 1 < ip.size(); ++t) {
    if (ip[t + 1] < ip[t]) fail("indptr is decreasing at term " + std::to_string(t));
  }
  if (static_cast<std::size_t>(ip[ip.size() - 1]) != cols.doc_ids.size()) {
    fail("indptr[-1]=" + std::to_string(ip[ip.size() - 1]) + " but doc_ids has " + std::to_string(cols.doc_ids.size()) + " entries");
  }
  if (cols.tfs.size() != cols.doc_ids.size()) fail("tfs and doc_ids differ in length");
  const std::size_t n_docs = cols.doc_len.size();
  check_doc_count(n_docs, "doc_len");
  for (std::size_t t = 0; t + 1 < ip.size(); ++t) {
    int64_t prev = -1;
    for (int64_t j = ip[t]; j < ip[t + 1]; ++j) {
      const int32_t d = cols.doc_ids[j];
      if (d < 0 || static_cast<std::size_t>(d) >= n_docs) fail("doc_ids[" + std::to_string(j) + "]=" + std::to_string(d) + " outside [0, n_docs)");
      if (d <= prev) fail("doc_ids of term " + std::to_string(t) + " are not strictly increasing");
      if (cols.tfs[j] <= 0) fail("tfs[" + std::to_string(j) + "] must be positive");
      prev = d;
    }
  }
  for (std::size_t d = 0; d < n_docs; ++d) {
    if (cols.doc_len[d] < 0) fail("doc_len[" + std::to_string(d) + "] is negative");
  }
  if (grouped) {
    if (cols.doc_group.size() != n_docs) fail("doc_group must have one entry per document");
    if (n_groups < 0) fail("n_groups must be >= 0");
    for (std::size_t d = 0; d < n_docs; ++d) {
      const int32_t g = cols.doc_group[d];
      if (g < 0 || g >= n_groups) fail("doc_group[" + std::to_string(d) + "]=" + std::to_string(g) + " outside [0, n_groups)");
    }
  } else {
    n_groups = static_cast<int32_t>(n_docs);
  }
  return InvertedIndex(std::move(cols), grouped, n_groups, params);
}

InvertedIndex::InvertedIndex(IndexColumns cols, bool grouped, int32_t n_groups, const Bm25Params& params)
    : cols_(std::move(cols)), n_groups_(n_groups), grouped_(grouped), params_(params) {
  const std::size_t n_docs = cols_.doc_len.size();
  double total = 0.0;
  for (std::size_t d = 0; d < n_docs; ++d) total += cols_.doc_len[d];
  avgdl_ = n_docs > 0 ? total / static_cast<double>(n_docs) : 0.0;
  const std::size_t n_terms = cols_.indptr.size() - 1;
  idf_.resize(n_terms);
  max_weight_.assign(n_terms, 0.0f);
  weight_.resize(cols_.doc_ids.size());
  for (std::size_t t = 0; t < n_terms; ++t) {
    const int64_t lo = cols_.indptr[t], hi = cols_.indptr[t + 1];
    const double idf = bm25_idf(params_, static_cast<double>(n_docs), static_cast<double>(hi - lo));
    idf_[t] = static_cast<float>(idf);
    float mx = 0.0f;
    for (int64_t j = lo; j < hi; ++j) {
      const double tfc = bm25_tfc(params_, cols_.tfs[j], cols_.doc_len[cols_.doc_ids[j]], avgdl_);
      weight_[j] = static_cast<float>(idf * tfc);
      mx = std::max(mx, weight_[j]);
    }
    max_weight_[t] = mx;
  }
  // Group -> documents CSR by counting; the common contiguous layout needs only the row
  // pointer (group g's documents are a range of doc ids).
  const std::size_t ng = static_cast<std::size_t>(n_groups_);
  group_ptr_.assign(ng + 1, 0);
  if (grouped_) {
    const int32_t* g = cols_.doc_group.data();
    for (std::size_t d = 0; d < n_docs; ++d) {
      ++group_ptr_[static_cast<std::size_t>(g[d]) + 1];
      if (d > 0 && g[d] < g[d - 1]) groups_contiguous_ = false;
    }
    for (std::size_t i = 0; i < ng; ++i) group_ptr_[i + 1] += group_ptr_[i];
    if (!groups_contiguous_) {
      group_docs_.resize(n_docs);
      std::vector<int64_t> cursor(group_ptr_.begin(), group_ptr_.end() - 1);
      for (std::size_t d = 0; d < n_docs; ++d) group_docs_[cursor[g[d]]++] = static_cast<int32_t>(d);
    }
  } else {
    for (std::size_t i = 0; i < ng; ++i) group_ptr_[i + 1] = static_cast<int64_t>(i + 1);
  }
}

double InvertedIndex::upper_bound(const int32_t* terms, std::size_t n) const noexcept {
  double ub = 0.0;
  const int64_t n_terms = static_cast<int64_t>(idf_.size());
  for (std::size_t i = 0; i < n; ++i) {
    const int32_t t = terms[i];
    if (t >= 0 && t < n_terms) ub += idf_[t];
  }
  return ub;
}

void InvertedIndex::check_batch(const QueryBatch& q, std::size_t n_terms_total) const {
  if (q.n_queries == 0) return;
  if (q.offsets == nullptr) fail("query offsets must not be null");
  if (q.offsets[0] != 0) fail("query offsets[0] must be 0");
  for (std::size_t i = 0; i < q.n_queries; ++i) {
    if (q.offsets[i + 1] < q.offsets[i]) fail("query offsets decrease at query " + std::to_string(i));
  }
  if (static_cast<std::size_t>(q.offsets[q.n_queries]) != n_terms_total) {
    fail("query offsets[-1]=" + std::to_string(q.offsets[q.n_queries]) + " but " + std::to_string(n_terms_total) + " term ids were given");
  }
  const int64_t n_terms = static_cast<int64_t>(this->n_terms());
  for (std::size_t i = 0; i < n_terms_total; ++i) {
    if (q.terms[i] >= n_terms) fail("query term id " + std::to_string(q.terms[i]) + " at position " + std::to_string(i) + " >= n_terms " + std::to_string(n_terms));
  }
}

void InvertedIndex::accumulate(const int32_t* terms, std::size_t n, float* acc) const noexcept {
  const int64_t* ip = cols_.indptr.data();
  const int32_t* docs = cols_.doc_ids.data();
  const float* w = weight_.data();
  for (std::size_t i = 0; i < n; ++i) {
    const int32_t t = terms[i];
    if (t < 0) continue;  // out-of-vocabulary token
    for (int64_t j = ip[t], e = ip[t + 1]; j < e; ++j) acc[docs[j]] += w[j];
  }
}

void InvertedIndex::score_one(const int32_t* terms, std::size_t n, Scale scale, bool group, float* acc,
                              float* out) const noexcept {
  const std::size_t nd = n_docs();
  float* target = group ? acc : out;
  std::fill(target, target + nd, 0.0f);
  accumulate(terms, n, target);
  if (group && grouped_) {
    std::fill(out, out + n_groups(), 0.0f);
    const int32_t* g = cols_.doc_group.data();
    for (std::size_t d = 0; d < nd; ++d) out[g[d]] = std::max(out[g[d]], acc[d]);
  } else if (group) {
    std::copy(acc, acc + nd, out);
  }
  if (scale != Scale::kRaw) {
    const detail::Scaler f(scale, upper_bound(terms, n), params_.k1);
    const std::size_t w = out_width(group);
    for (std::size_t i = 0; i < w; ++i) out[i] = f(out[i]);
  }
}

void InvertedIndex::score_dense(const QueryBatch& q, Scale scale, bool group, float* out, int threads) const {
  const std::size_t width = out_width(group);
  parallel_chunks(q.n_queries, threads, kMinQueriesPerThread, [&](int, std::size_t lo, std::size_t hi) {
    std::vector<float> acc(group ? n_docs() : 0);
    for (std::size_t i = lo; i < hi; ++i) {
      const int64_t a = q.offsets[i], b = q.offsets[i + 1];
      score_one(q.terms + a, static_cast<std::size_t>(b - a), scale, group, acc.data(), out + i * width);
    }
  });
}

}  // namespace toolsift
