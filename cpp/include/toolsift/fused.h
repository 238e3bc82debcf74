// One engine call per search: every BM25 field's candidates and scores, the MFTR
// combination and the top k, for a batch of queries.
//
// The same answer as toolsift's general search path (toolsift.search: candidates_union,
// top-up, pack_fields, the Numba MFTR kernel, hits.rank), which stays the reference the
// tests compare with bit for bit: the BM25 scores come from the same index code (or a
// dense accumulator that adds each document's weights in the same query order), and the
// MFTR combination below is the kernel's float64 arithmetic, operation by operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "toolsift/int8_dot.h"
#include "toolsift/inverted_index.h"

namespace toolsift {

// The MFTR model's parameters (toolsift.kernels.params.ScoringParams).
struct MftrParams {
  double weights[4] = {1.0, 1.0, 1.0, 1.0};  // description, parameters, response, examples
  double bias = 0.0;
  double alpha = 0.0;      // penalty sigmoid steepness
  double tau = 0.0;        // penalty sigmoid threshold
  double w_req = 0.0;      // penalty weight of a required parameter
  double w_opt = 0.0;      // ... of an optional one
  double max_share = 0.0;  // share of the max (vs the mean) in the parameters field
  bool renormalize = false;
};

// One field's analysed texts for a batch of queries: text i has terms[offsets[i] :
// offsets[i+1]], and query q's texts are [text_ptr[q], text_ptr[q+1]).
struct FieldQueries {
  QueryBatch texts;
  const int64_t* text_ptr = nullptr;  // n_queries + 1
};

// A hybrid need field's dense half (toolsift.search.retrievers.HybridRetriever): its
// field score is w_bm * BM25 + w_cos * max(cosine, 0), in float32, where a tool's
// cosine is the max over its rows (0 for a tool without rows).
struct DenseHalf {
  bool hybrid = false;   // false: the field is plain BM25
  bool has_cos = false;  // false: every row empty (cosine 0 everywhere)
  Int8Rows rows{nullptr, nullptr, 0, 0};
  const int64_t* tool_ptr = nullptr;  // n_tools + 1: the rows of tool t; null: row t is tool t
  const int8_t* q_codes = nullptr;    // [this field's texts, rows.d]: the query texts' int8 codes
  const float* q_scales = nullptr;    // [this field's texts]
  float w_bm = 1.0f, w_cos = 0.0f;
};

// The hybrid preset's additions to a batch: the dense halves and, per need field, the
// candidates its dense half adds (its top tools, found by the caller), joined to the
// BM25 candidates before the top-up.
struct HybridInputs {
  DenseHalf need[3];
  const int64_t* extra_ptr[3] = {nullptr, nullptr, nullptr};  // n_queries + 1; null: the field adds none
  const int64_t* extra_ids[3] = {nullptr, nullptr, nullptr};  // tool ids, any order, duplicates allowed
};

struct FusedBatch {
  FieldQueries need[3];  // description, response, examples: one text per tool need
  FieldQueries params;   // one text per argument (or need intent)
  const uint8_t* penalize = nullptr;  // n_queries
  std::size_t n_queries = 0;
  const HybridInputs* hybrid = nullptr;  // null: every field BM25
};

// The batch of one raw text (toolsift.search.plan._plan_one_raw): its terms in the three
// need fields and, with params_field, in the parameters field (else no parameter text); no
// penalty; `hybrid` as given. It points into itself: made in place, never copied or moved.
class OneTextBatch {
 public:
  OneTextBatch(const std::vector<int32_t>& terms, bool params_field, const HybridInputs* hybrid = nullptr)
      : offsets_{0, static_cast<int64_t>(terms.size())} {
    const FieldQueries one{QueryBatch{terms.data(), offsets_, 1}, one_ptr_};
    const FieldQueries none{QueryBatch{terms.data(), none_off_, 0}, none_ptr_};
    for (int f = 0; f < 3; ++f) batch.need[f] = one;
    batch.params = params_field ? one : none;
    batch.penalize = &penalize_;
    batch.n_queries = 1;
    batch.hybrid = hybrid;
  }
  OneTextBatch(const OneTextBatch&) = delete;
  OneTextBatch& operator=(const OneTextBatch&) = delete;

  FusedBatch batch;

 private:
  int64_t offsets_[2];
  int64_t one_ptr_[2] = {0, 1};
  int64_t none_off_[1] = {0};
  int64_t none_ptr_[2] = {0, 0};
  uint8_t penalize_ = 0;
};

struct FusedOptions {
  std::size_t n = 100;  // candidates per text and field
  std::size_t k = 10;   // hits per query
  Scale scale = Scale::kBounded;
  int threads = 1;
  // Fields of at most this many documents sum each text's postings once into a dense row
  // (InvertedIndex::sum_text); larger ones take top_text + gather_texts. Same answers.
  std::size_t sum_docs = InvertedIndex::kSumDocs;
  bool breakdown = false;  // fill FusedHits::terms for the hits
};

struct FusedHits {
  std::vector<int64_t> ptr;  // n_queries + 1
  std::vector<int64_t> tool;
  std::vector<float> score;
  std::vector<uint8_t> matched;  // 0: added only to fill k (no field matched it)
  // Hybrid searches only, what toolsift.search.evidence needs to tell evidence from a
  // weak dense candidate without a second pass: per hit, whether some BM25 field (or
  // lexical half) had it among its candidates, and per need field its cosine (the max
  // over the query's texts; NaN when that field's dense half did not add the hit as a
  // candidate).
  std::vector<uint8_t> lexical;
  std::vector<float> cos;  // [hits, 3]
  // With FusedOptions::breakdown: per hit its MFTR terms (S_desc, S_param, S_resp, S_ex,
  // penalty) in float64, [hits, 5]: what an explanation's reason is made from.
  std::vector<double> terms;
};

class FusedSearcher {
 public:
  // need: the description, response and examples indexes (documents grouped by tool, or
  // one per tool); params: the parameters index (one document per parameter, by tool); param_ptr
  // (n_tools + 1), param_required (param_ptr[n_tools]) and tool_bits (n_tools: bit f set
  // when the tool has field f, in weight order) are copied. Throws std::invalid_argument
  // on any inconsistency.
  FusedSearcher(std::shared_ptr<const InvertedIndex> need[3], std::shared_ptr<const InvertedIndex> params,
                const int64_t* param_ptr, std::size_t n_tools, const uint8_t* param_required,
                const uint8_t* tool_bits);
  ~FusedSearcher();  // out of line: Scratch is complete only in fused.cpp
  FusedSearcher(const FusedSearcher&) = delete;
  FusedSearcher& operator=(const FusedSearcher&) = delete;

  std::size_t n_tools() const noexcept { return n_tools_; }
  const InvertedIndex& need_index(std::size_t f) const noexcept { return *need_[f]; }
  const InvertedIndex& param_index() const noexcept { return *params_; }
  // The parameter documents of tool t are [param_ptr()[t], param_ptr()[t + 1]), with their
  // required flags; tool_bits()[t] has bit f set when tool t has field f (weight order).
  const int64_t* param_ptr() const noexcept { return param_ptr_.data(); }
  const uint8_t* param_required() const noexcept { return param_required_.data(); }
  const uint8_t* tool_bits() const noexcept { return tool_bits_.data(); }

  // Validates a batch against the indexes (term ids, CSR pointers); throws
  // std::invalid_argument naming the first problem.
  void check(const FusedBatch& b) const;

  // The top k of every query: score descending, then catalogue position.
  void search(const FusedBatch& b, const MftrParams& p, const FusedOptions& o, FusedHits& out) const;

  struct Scratch;

 private:
  void search_one(const FusedBatch& b, std::size_t q, const MftrParams& p, const FusedOptions& o, Scratch& s,
                  FusedHits& out) const;
  void mix_dense(const HybridInputs& h, int64_t n0, int64_t nn, Scratch& s) const;
  std::unique_ptr<Scratch> acquire() const;
  void give_back(std::unique_ptr<Scratch> s) const;

  std::shared_ptr<const InvertedIndex> need_[3];
  std::shared_ptr<const InvertedIndex> params_;
  std::vector<int64_t> param_ptr_;
  std::vector<uint8_t> param_required_;
  std::vector<uint8_t> tool_bits_;
  std::size_t n_tools_ = 0;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Scratch>> free_;
};

// HybridRetriever.mix, the one definition of a hybrid field's score: row[i] = row[i] * w_bm
// + max(cos[i], 0) * w_cos in float32, in that order (cos null: an all-empty dense half,
// row[i] * w_bm).
void mix_cos(float* row, const float* cos, std::size_t n, float w_bm, float w_cos) noexcept;

// A dense half's cosine of each of the nc tools cand[] for one query row (codes qc, scale
// *qs): the int8 gather of the tool's row, or with tool_ptr the max over its rows (0 for a
// tool without rows), as toolsift.search.retrievers.DenseRetriever.gather. rows and
// row_cos are scratch.
void dense_cos(const DenseHalf& d, const int8_t* qc, const float* qs, const int64_t* cand, std::size_t nc,
               std::vector<int64_t>& rows, std::vector<float>& row_cos, float* out);

// Sorts `v` and drops its repeats.
void sort_unique(std::vector<int64_t>& v);

// sort_unique for keys in [0, n_keys) (trusted): through a bitmap of the keys when it is
// small (a search's few hundred candidate tools of a catalogue up to 2^18 tools: setting
// bits and reading them out in order costs less than sorting), else by sorting.
void sort_unique(std::vector<int64_t>& v, std::size_t n_keys);

// A field's dense candidates joined to the candidates: `dc` sorted without repeats and
// appended to `cand` (sort_unique(cand) afterwards makes the union); whether any were.
bool append_dense(std::vector<int64_t>& dc, std::vector<int64_t>& cand);

// Tops the sorted candidates `cand` up to `want` tools with the first tools in catalogue
// order that are not candidates (toolsift.search.candidates._top_up), keeping catalogue
// order; found[i] = 0 for an added tool (not "matched"), 1 otherwise. merged is scratch.
void top_up(std::vector<int64_t>& cand, std::size_t want, std::vector<uint8_t>& found, std::vector<int64_t>& merged);

// The MFTR score of one candidate: toolsift.kernels.mftr's kernel body, the same float64
// operations in the same order. Need r's (description, response, examples) similarities
// are desc/resp/ex[r * need_stride]; ap holds the arg-major argument x parameter
// similarities (ap[a * n_params + k]; unread when n_args or n_params is 0); required has
// the candidate's n_params required flags; bits its fields (1 description, 2 parameters,
// 4 response, 8 examples). terms, when not null, receives the kernel's breakdown
// (S_desc, S_param, S_resp, S_ex, penalty) as float32, as the kernel writes it.
float mftr_score(const float* desc, const float* resp, const float* ex, int64_t need_stride, int64_t n_needs,
                 const float* ap, int64_t n_args, const uint8_t* required, int64_t n_params, uint8_t bits,
                 bool penalize, const MftrParams& p, float* terms = nullptr) noexcept;

// mftr_score with the breakdown in float64, as the formula computes it before rounding
// (what an explanation shows: toolsift.kernels.reference's terms). The same function.
float mftr_score(const float* desc, const float* resp, const float* ex, int64_t need_stride, int64_t n_needs,
                 const float* ap, int64_t n_args, const uint8_t* required, int64_t n_params, uint8_t bits,
                 bool penalize, const MftrParams& p, double* terms) noexcept;

}  // namespace toolsift
