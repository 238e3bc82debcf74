// Per-field inverted index: CSR postings (term -> doc ids, term frequencies), document
// lengths and an optional doc -> group map (several documents of one tool, such as its
// example intents, reduce to one score per tool by max).
//
// Scoring is term-at-a-time into a dense accumulator, which for tool catalogues (10^3 to
// 10^5 short documents) beats document-at-a-time and needs no skip lists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "toolsift/bm25.h"
#include "toolsift/column.h"

namespace toolsift {

// A batch of analysed query texts as CSR: text i has terms[offsets[i] : offsets[i+1]].
// Negative term ids stand for out-of-vocabulary tokens and are skipped.
// How a text's BM25 scores are put on a scale.
enum class Scale : int32_t {
  kRaw = 0,      // plain BM25
  kBounded = 1,  // 1 - exp(-raw / ref), ref = sum idf / (1 + k1): in [0, 1), saturating
  kLinear = 2,   // raw / sum idf: in [0, 1), linear
};

struct QueryBatch {
  const int32_t* terms = nullptr;
  const int64_t* offsets = nullptr;
  std::size_t n_queries = 0;
};

struct IndexColumns {
  Column<int64_t> indptr;   // n_terms + 1
  Column<int32_t> doc_ids;  // nnz, ascending within each term
  Column<int32_t> tfs;      // nnz
  Column<int32_t> doc_len;  // n_docs
  Column<int32_t> doc_group;  // n_docs, or empty: group == doc
};

class InvertedIndex {
 public:
  // Builds postings from analysed documents: document d has tokens[offsets[d] : offsets[d+1]].
  static InvertedIndex build(const int32_t* tokens, const int64_t* offsets, std::size_t n_docs,
                             int32_t n_terms, const int32_t* doc_group, bool grouped, int32_t n_groups,
                             const Bm25Params& params);

  // Adopts existing columns (e.g. memory-mapped). Validates every CSR invariant first and
  // throws std::invalid_argument naming the first violation.
  // `grouped`: doc_group maps documents to n_groups groups (possibly with no documents at
  // all, e.g. a catalogue without parameters); otherwise each document is its own group.
  static InvertedIndex from_columns(IndexColumns cols, bool grouped, int32_t n_groups, const Bm25Params& params);

  std::size_t n_docs() const noexcept { return cols_.doc_len.size(); }
  std::size_t n_terms() const noexcept { return cols_.indptr.size() - 1; }
  std::size_t n_groups() const noexcept { return static_cast<std::size_t>(n_groups_); }
  bool grouped() const noexcept { return grouped_; }
  std::size_t nnz() const noexcept { return cols_.doc_ids.size(); }
  double avgdl() const noexcept { return avgdl_; }
  const Bm25Params& params() const noexcept { return params_; }
  const IndexColumns& columns() const noexcept { return cols_; }
  const std::vector<float>& idf() const noexcept { return idf_; }

  // Sum of idf over a text's in-vocabulary terms (duplicates counted): the supremum of
  // its BM25 score against any document; the bounded scale is built on it.
  double upper_bound(const int32_t* terms, std::size_t n) const noexcept;

  // Dense scores on `scale`. `out` has n_queries rows of n_docs() (group=false) or n_groups()
  // (group=true, max over each group's documents) floats.
  void score_dense(const QueryBatch& q, Scale scale, bool group, float* out, int threads) const;

  // Top-k per query, ties broken by lower id. Rows with fewer than k positive scores are
  // padded with id -1 and score 0.
  void topk(const QueryBatch& q, std::size_t k, Scale scale, bool group, int64_t* ids,
            float* scores, int threads) const;

  // Validates a query batch against this index; throws std::invalid_argument on a bad
  // offset or a term id >= n_terms.
  void check_batch(const QueryBatch& q, std::size_t n_terms_total) const;

 private:
  InvertedIndex(IndexColumns cols, bool grouped, int32_t n_groups, const Bm25Params& params);
  void accumulate(const int32_t* terms, std::size_t n, float* acc) const noexcept;
  std::size_t out_width(bool group) const noexcept { return group ? n_groups() : n_docs(); }
  void score_one(const int32_t* terms, std::size_t n, Scale scale, bool group, float* acc,
                 float* out) const noexcept;

  IndexColumns cols_;
  int32_t n_groups_ = 0;
  bool grouped_ = false;
  Bm25Params params_;
  double avgdl_ = 0.0;
  std::vector<float> idf_;     // per term
  std::vector<float> weight_;  // per posting: idf * tfc, precomputed
};

}  // namespace toolsift
