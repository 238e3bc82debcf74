// Per-field inverted index: CSR postings (term -> doc ids, term frequencies), document
// lengths and an optional doc -> group map (several documents of one tool, such as its
// example intents, reduce to one score per tool by max).
//
// score_dense is term-at-a-time into a dense row. Everything else (topk, candidates,
// gather) costs what the query's postings cost: top-k scatters postings window by window
// into a small pooled accumulator (optionally with MaxScore pruning), gather adds
// postings into candidate slots or gallops candidates through long posting lists.
// All paths add a document's term weights in query order, so their scores equal
// score_dense's bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "toolsift/bm25.h"
#include "toolsift/column.h"
#include "toolsift/scratch.h"

namespace toolsift {

// A batch of analysed query texts as CSR: text i has terms[offsets[i] : offsets[i+1]].
// Negative term ids stand for out-of-vocabulary tokens and are skipped.
// How a text's BM25 scores are put on a scale.
enum class Scale : int32_t {
  kRaw = 0,      // plain BM25
  kBounded = 1,  // 1 - exp(-raw / ref), ref = sum idf / (1 + k1): in [0, 1), saturating
  kLinear = 2,   // raw / sum idf: in [0, 1), linear
};

// How topk finds the best ids (all exact, same results): kAuto is exhaustive below
// 500,000 documents and MaxScore from there (measurements in topk.cpp).
enum class Prune : int32_t { kAuto = 0, kExhaustive = 1, kMaxScore = 2 };

// Query texts grouped into queries: text i belongs to query text_query[i] (nondecreasing).
struct TextQueries {
  const int64_t* text_query = nullptr;  // n_texts entries
  std::size_t n_queries = 0;
};

// Candidate ids per query as CSR: query q has ids[ptr[q] : ptr[q+1]], strictly increasing.
struct CandidateSet {
  const int64_t* ptr = nullptr;  // n_queries + 1
  const int64_t* ids = nullptr;
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

// Throws std::invalid_argument unless n_docs fits the int32 document ids the postings
// hold (checked before any cast: a larger count would wrap to negative ids).
void check_doc_count(std::size_t n_docs, const char* what);

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
  // padded with id -1 and score 0. Cost follows the query's postings, not n_docs.
  void topk(const QueryBatch& q, std::size_t k, Scale scale, bool group, int64_t* ids,
            float* scores, int threads, Prune prune = Prune::kAuto) const;

  // Per query, the sorted union over its texts of each text's top-n ids (positive
  // scores only). Returns the CSR row pointer (n_queries + 1) and fills `ids`.
  std::vector<int64_t> candidates(const QueryBatch& q, const TextQueries& tq, std::size_t n, Scale scale,
                                  bool group, int threads, Prune prune, std::vector<int64_t>& ids) const;

  // Output offsets of gather: text i's scores start at the returned [i] (n_texts + 1 entries).
  static std::vector<int64_t> gather_offsets(std::size_t n_texts, const TextQueries& tq, const CandidateSet& c);

  // Scores of each text against its query's candidate ids (groups when `group`, else
  // documents), text-major at `offsets` (from gather_offsets). Equal to score_dense's.
  void gather(const QueryBatch& q, const TextQueries& tq, const CandidateSet& c, Scale scale, bool group,
              const int64_t* offsets, float* out, int threads) const;

  // The fused search's per-text steps (fused.h): one text's top-n ids (positive scores,
  // as topk ranks them) appended to `ids`; and texts [t0, t1) of `q` scored against the
  // same nc ids (groups when `group`), text-major into out[(t - t0) * nc + i], as gather.
  void top_text(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group, Prune prune,
                std::vector<int64_t>& ids) const;
  void gather_texts(const QueryBatch& q, int64_t t0, int64_t t1, const int64_t* ids, std::size_t nc, Scale scale,
                    bool group, float* out) const;

  // The fused search's path for fields of at most kSumDocs documents (text_sums.cpp):
  // one pass over a text's postings into a dense row of raw sums (each document's weights
  // added in query-term order, as every other path adds them), then its top-n and any
  // candidate's score read from that row. `acc` has n_docs() zeros on entry to sum_text;
  // `touched` receives the documents it made non-zero (clear_sums resets exactly those).
  // Measured on synthetic catalogues (one thread, 200 real queries, per search p50):
  // 20k tools 0.17 ms with rows vs 0.23 ms without, 50k 0.31 vs 0.37, 100k (fields of 100k
  // and 202k documents) 0.73 ms with rows up to 2^17 documents vs 0.72 without, 0.79 with
  // rows for all: past ~10^5 documents the scattered adds miss the cache.
  static constexpr std::size_t kSumDocs = std::size_t{1} << 17;
  void sum_text(const int32_t* terms, std::size_t m, float* acc, std::vector<int32_t>& touched) const;
  // The ids top_text gives for the same text; `best` is n_groups() zeros, returned so.
  void top_from_sums(const float* acc, const std::vector<int32_t>& touched, const int32_t* terms, std::size_t m,
                     std::size_t n, Scale scale, bool group, float* best, std::vector<int64_t>& ids) const;
  // Raw score of group g (max over its documents' sums, 0 without any), as gather takes it.
  float group_sum(const float* acc, int64_t g) const noexcept;
  static void clear_sums(float* acc, std::vector<int32_t>& touched) noexcept;

  // Validates a query batch against this index; throws std::invalid_argument on a bad
  // offset or a term id >= n_terms.
  void check_batch(const QueryBatch& q, std::size_t n_terms_total) const;
  // Validates text_query: n_texts entries in [0, n_queries), nondecreasing.
  static void check_text_queries(const TextQueries& tq, std::size_t n_texts);
  // Validates a candidate CSR: ptr from 0, nondecreasing, ending at n_ids; ids of a
  // query strictly increasing and in [0, width(group)).
  void check_candidates(const CandidateSet& c, std::size_t n_queries, std::size_t n_ids, bool group) const;

  std::size_t out_width(bool group) const noexcept { return group ? n_groups() : n_docs(); }

 private:
  struct Hit {
    float score;
    int64_t id;
  };
  InvertedIndex(IndexColumns cols, bool grouped, int32_t n_groups, const Bm25Params& params);
  void accumulate(const int32_t* terms, std::size_t n, float* acc) const noexcept;
  void score_one(const int32_t* terms, std::size_t n, Scale scale, bool group, float* acc,
                 float* out) const noexcept;
  // Best n (scaled score, id) of one text, best first, into `hits`.
  void top_one(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group, Prune prune,
               Scratch& s, std::vector<Hit>& hits) const;
  void top_exhaustive(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group, Scratch& s,
                      std::vector<Hit>& hits) const;
  void top_maxscore(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group, Scratch& s,
                    std::vector<Hit>& hits) const;
  void gather_query(const QueryBatch& q, int64_t t0, int64_t t1, const int64_t* cands, std::size_t nc,
                    Scale scale, bool group, Scratch& s, std::vector<int32_t>& slot_docs,
                    std::vector<int32_t>& slot_ptr, std::vector<float>& sacc, float* out) const;

  IndexColumns cols_;
  int32_t n_groups_ = 0;
  bool grouped_ = false;
  Bm25Params params_;
  double avgdl_ = 0.0;
  std::vector<float> idf_;     // per term
  std::vector<float> weight_;  // per posting: idf * tfc, precomputed
  std::vector<float> max_weight_;  // per term: max weight over its postings (MaxScore bound)
  // Group -> documents as CSR. When doc_group is nondecreasing (the documents of a group
  // are contiguous and in group order, as toolsift writes them) group_docs_ stays empty
  // and group g's documents are simply [group_ptr_[g], group_ptr_[g+1]).
  std::vector<int64_t> group_ptr_;
  std::vector<int32_t> group_docs_;
  bool groups_contiguous_ = true;
  std::shared_ptr<ScratchPool> pool_ = std::make_shared<ScratchPool>();
};

}  // namespace toolsift
