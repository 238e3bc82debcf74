// toolsift/hybrid_text.h: one raw-text query on a hybrid index, as
// toolsift.search.fused_hybrid.run_hybrid does it for one raw query, in one call.
#include "toolsift/hybrid_text.h"

#include <algorithm>
#include <utility>

#include "toolsift/embed.h"
#include "toolsift/group_top.h"

namespace toolsift {

HybridText::HybridText(std::shared_ptr<const FusedSearcher> searcher, WordPiece wordpiece, const TokenTable& table,
                       const DenseHalf half[3], const DenseCandidates cand[3], const MftrParams& params,
                       const FusedOptions& options, bool params_field, bool lowercase, int threads)
    : searcher_(std::move(searcher)), wp_(std::move(wordpiece)), table_(table), params_(params), options_(options),
      params_field_(params_field), words_(lowercase, std::size_t{1} << 17), threads_(threads) {
  for (int f = 0; f < 3; ++f) {
    half_[f] = half[f];
    cand_[f] = cand[f];
    coarse_[f].store(cand[f].coarse, std::memory_order_relaxed);
  }
}

HybridText::Status HybridText::search(const char* text, std::size_t n, std::size_t k, FusedHits& out,
                                      std::vector<std::string>& unknown, bool breakdown) const {
  thread_local std::vector<int32_t> terms, tokens;
  thread_local std::vector<int64_t> ids, cut_ptr;
  terms.clear();
  tokens.clear();
  // BM25: the request's words (toolsift.search.plan._plan_one_raw's term batch).
  if (!words_.terms(text, n, terms, unknown)) return Status::kUnknownWords;
  // The static query vector's WordPiece ids (StaticEncoder.token_ids of one text).
  if (!wp_.ids(text, n, tokens)) return Status::kNotTaken;
  const int64_t ptr[2] = {0, static_cast<int64_t>(tokens.size())};
  if (!cut_ids(tokens.data(), ptr, 1, ids, cut_ptr)) return Status::kNotTaken;
  return one_step(terms, ids.data(), ids.size(), k, out, breakdown);
}

HybridText::Status HybridText::search_ids(const std::vector<int32_t>& terms, const int64_t* tokens,
                                          const int64_t* token_ptr, std::size_t n_readings, std::size_t k,
                                          FusedHits& out, bool breakdown) const {
  thread_local std::vector<int64_t> ids, ptr;
  if (n_readings == 0 || !cut_ids(tokens, token_ptr, n_readings, ids, ptr)) return Status::kNotTaken;
  if (n_readings > 1) return steps(terms, ids.data(), ptr.data(), n_readings, k, out, breakdown);
  return one_step(terms, ids.data(), ids.size(), k, out, breakdown);
}

HybridText::Status HybridText::one_step(const std::vector<int32_t>& terms, const int64_t* tokens, std::size_t n_tokens,
                                        std::size_t k, FusedHits& out, bool breakdown) const {
  thread_local std::vector<int64_t> extra[3];
  thread_local std::vector<float> vec;
  thread_local std::vector<int8_t> q_codes;
  // The static query vector (StaticEncoder.encode of one text, then quantize_trusted).
  const std::size_t d = table_.d;
  vec.assign(d, 0.0f);
  const int64_t ptr[2] = {0, static_cast<int64_t>(n_tokens)};
  static_mean_rows(table_.codes, d, table_.mult, ptr, 1, tokens, vec.data(), 1);
  q_codes.assign(d, 0);
  float q_scale = 0.0f;
  quantize_rows(vec.data(), 1, d, q_codes.data(), &q_scale, 1);

  // Each need field's dense candidates (DenseRetriever.candidates -> DenseField.top_tools).
  HybridInputs h;
  int64_t extra_ptr[3][2] = {{0, 0}, {0, 0}, {0, 0}};
  for (int f = 0; f < 3; ++f) {
    h.need[f] = half_[f];
    if (!half_[f].hybrid || !half_[f].has_cos) continue;  // BM25, or every row empty: no cosine
    h.need[f].q_codes = q_codes.data();
    h.need[f].q_scales = &q_scale;
    extra[f].clear();
    if (!cand_[f].adds) continue;
    dense_candidates(cand_[f], coarse_[f].load(std::memory_order_acquire), q_codes.data(), &q_scale, 1, k,
                     searcher_->n_tools(), threads_, extra[f]);
    extra_ptr[f][1] = static_cast<int64_t>(extra[f].size());
    h.extra_ptr[f] = extra_ptr[f];
    h.extra_ids[f] = extra[f].data();
  }

  const OneTextBatch one(terms, params_field_, &h);
  searcher_->check(one.batch);
  FusedOptions o = options_;
  o.k = k;
  o.threads = threads_;
  o.breakdown = breakdown;
  searcher_->search(one.batch, params_, o, out);
  return Status::kHits;
}

}  // namespace toolsift
