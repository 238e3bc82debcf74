// HybridText::search_steps (toolsift/hybrid_text.h): a multi-step raw request as
// toolsift.search.needs.run_steps searches it, in one call. The BM25 half is one text's
// (FusedSearcher::search_one's steps for a batch of one raw text: every field's top-n, the
// union, the top-up, every field's scores of the candidates), computed once; the dense
// half is every reading's; the field mix (mix_cos), the MFTR score (mftr_score) and the
// combination over readings (combine_needs) are the engine's one definitions.
#include <algorithm>
#include <cmath>
#include <limits>

#include "scoring_detail.h"
#include "toolsift/combine_needs.h"
#include "toolsift/embed.h"
#include "toolsift/group_top.h"
#include "toolsift/hybrid_text.h"

namespace toolsift {

namespace {

// One field's dense row of raw BM25 sums (all zero between searches) and what it touched.
struct Sums {
  std::vector<float> acc, best;
  std::vector<int32_t> touched;
};

}  // namespace

HybridText::Status HybridText::search_steps(const char* const* texts, const std::size_t* lens, std::size_t n_readings,
                                            std::size_t k, FusedHits& out, std::vector<std::string>& unknown,
                                            bool breakdown) const {
  thread_local std::vector<int32_t> terms, tokens;
  thread_local std::vector<int64_t> token_ptr;
  if (n_readings == 0) return Status::kNotTaken;
  terms.clear();
  // BM25: the whole request's words, as search() takes them.
  if (!words_.terms(texts[0], lens[0], terms, unknown)) return Status::kUnknownWords;
  // Every reading's WordPiece ids, one after another (WordPiece appends).
  tokens.clear();
  token_ptr.assign(1, 0);
  for (std::size_t r = 0; r < n_readings; ++r) {
    if (!wp_.ids(texts[r], lens[r], tokens)) return Status::kNotTaken;
    token_ptr.push_back(static_cast<int64_t>(tokens.size()));
  }
  thread_local std::vector<int64_t> ids, cut_ptr;
  if (!cut_ids(tokens.data(), token_ptr.data(), n_readings, ids, cut_ptr)) return Status::kNotTaken;
  return steps(terms, ids.data(), cut_ptr.data(), n_readings, k, out, breakdown);
}

HybridText::Status HybridText::steps(const std::vector<int32_t>& terms, const int64_t* token_ids,
                                     const int64_t* token_ptr, std::size_t n_readings, std::size_t k, FusedHits& out,
                                     bool breakdown) const {
  thread_local std::vector<int64_t> dense_cand[3], cand, lex, merged, docs, top_idx, top_reading, first_par;
  thread_local std::vector<float> vecs, q_scales, bm[3], par, sims[3], cos, row_cos, block, cos_max[3], top_score;
  thread_local std::vector<int8_t> q_codes;
  thread_local std::vector<int64_t> rows;
  thread_local std::vector<uint8_t> found;
  thread_local Sums sums[4];
  const std::size_t R = n_readings;
  // Every reading's static vector and int8 codes (StaticEncoder.encode, quantize_rows).
  const std::size_t d = table_.d;
  vecs.assign(R * d, 0.0f);
  static_mean_rows(table_.codes, d, table_.mult, token_ptr, R, token_ids, vecs.data(), 1);
  q_codes.assign(R * d, 0);
  q_scales.assign(R, 0.0f);
  quantize_rows(vecs.data(), R, d, q_codes.data(), q_scales.data(), 1);

  const OneTextBatch one(terms, params_field_);
  searcher_->check(one.batch);
  const FusedSearcher& fs = *searcher_;
  const std::size_t n_tools = fs.n_tools();

  // The request's BM25 candidates in every field (FusedSearcher::search_one).
  const std::size_t m_terms = terms.size();
  bool summed[4];
  cand.clear();
  for (int f = 0; f < 4; ++f) {
    const InvertedIndex& idx = f < 3 ? fs.need_index(static_cast<std::size_t>(f)) : fs.param_index();
    summed[f] = idx.n_docs() <= options_.sum_docs;
    if (f == 3 && !params_field_) continue;
    if (summed[f]) {
      Sums& s = sums[f];
      if (s.acc.size() < idx.n_docs()) s.acc.resize(idx.n_docs(), 0.0f);
      if (s.best.size() < idx.n_groups()) s.best.resize(idx.n_groups(), 0.0f);
      idx.sum_text(terms.data(), m_terms, s.acc.data(), s.touched);
      idx.top_from_sums(s.acc.data(), s.touched, terms.data(), m_terms, options_.n, options_.scale, true,
                        s.best.data(), cand);
    } else {
      idx.top_text(terms.data(), m_terms, options_.n, options_.scale, true, Prune::kAuto, cand);
    }
  }
  sort_unique(cand, n_tools);
  lex.assign(cand.begin(), cand.end());

  // Every reading's dense candidates in each need field (DenseField.top_tools over all
  // readings' codes at once), joined to the BM25 ones.
  bool added = false;
  for (int f = 0; f < 3; ++f) {
    auto& dc = dense_cand[f];
    dc.clear();
    if (!half_[f].hybrid || !half_[f].has_cos || !cand_[f].adds) continue;
    dense_candidates(cand_[f], coarse_[f].load(std::memory_order_acquire), q_codes.data(), q_scales.data(), R, k,
                     n_tools, threads_, dc);
    added = append_dense(dc, cand) || added;
  }
  if (added) sort_unique(cand, n_tools);
  // Top-up to min(k, n_tools) in catalogue order; the added tools are not "found".
  top_up(cand, std::min(k, n_tools), found, merged);
  const std::size_t nc = cand.size();

  // Every field's BM25 scores of the candidates, once.
  for (int f = 0; f < 3; ++f) {
    const InvertedIndex& idx = fs.need_index(static_cast<std::size_t>(f));
    bm[f].resize(nc);
    if (!summed[f]) {
      idx.gather_texts(one.batch.need[f].texts, 0, 1, cand.data(), nc, options_.scale, true, bm[f].data());
      continue;
    }
    const detail::Scaler scaled(options_.scale, idx.upper_bound(terms.data(), m_terms), idx.params().k1);
    const float* acc = sums[f].acc.data();
    for (std::size_t i = 0; i < nc; ++i) {
      const float v = idx.group_sum(acc, cand[i]);
      bm[f][i] = v == 0.0f ? 0.0f : scaled(v);
    }
  }
  const int64_t* pp = fs.param_ptr();
  const int64_t na = params_field_ ? 1 : 0;
  std::size_t nd = 0;
  if (na > 0) {
    docs.clear();
    for (const int64_t t : cand) {
      for (int64_t j = pp[t]; j < pp[t + 1]; ++j) docs.push_back(j);
    }
    nd = docs.size();
    par.resize(nd);
    const InvertedIndex& idx = fs.param_index();
    if (nd > 0 && !summed[3]) {
      idx.gather_texts(one.batch.params.texts, 0, 1, docs.data(), nd, options_.scale, false, par.data());
    } else if (nd > 0) {
      const detail::Scaler scaled(options_.scale, idx.upper_bound(terms.data(), m_terms), idx.params().k1);
      const float* acc = sums[3].acc.data();
      for (std::size_t j = 0; j < nd; ++j) {
        const float v = std::max(0.0f, acc[docs[j]]);
        par[j] = v == 0.0f ? 0.0f : scaled(v);
      }
    }
  }
  for (int f = 0; f < 4; ++f) {
    if (!sums[f].touched.empty()) InvertedIndex::clear_sums(sums[f].acc.data(), sums[f].touched);
  }

  // Per reading: each hybrid field's cosines mixed in, then MFTR per candidate.
  block.resize(R * nc);
  for (int f = 0; f < 3; ++f) {
    sims[f].resize(nc);
    cos_max[f].clear();
    if (half_[f].hybrid && half_[f].has_cos) cos_max[f].assign(nc, -std::numeric_limits<float>::infinity());
  }
  for (std::size_t r = 0; r < R; ++r) {
    for (int f = 0; f < 3; ++f) {
      const DenseHalf& h = half_[f];
      std::copy(bm[f].begin(), bm[f].end(), sims[f].begin());
      if (!h.hybrid) continue;
      if (!h.has_cos) {
        mix_cos(sims[f].data(), nullptr, nc, h.w_bm, h.w_cos);
        continue;
      }
      cos.resize(nc);
      dense_cos(h, q_codes.data() + r * d, q_scales.data() + r, cand.data(), nc, rows, row_cos, cos.data());
      float* cm = cos_max[f].data();
      for (std::size_t i = 0; i < nc; ++i) cm[i] = std::max(cm[i], cos[i]);
      mix_cos(sims[f].data(), cos.data(), nc, h.w_bm, h.w_cos);
    }
    float* score = block.data() + r * nc;
    std::size_t local = 0;
    for (std::size_t i = 0; i < nc; ++i) {
      const int64_t t = cand[i];
      const int64_t n_par = pp[t + 1] - pp[t];
      const float* ab = nullptr;
      if (na > 0 && n_par > 0) ab = par.data() + local;  // one argument: its row is the block
      score[i] = mftr_score(sims[0].data() + i, sims[1].data() + i, sims[2].data() + i, static_cast<int64_t>(nc), 1, ab,
                            na, fs.param_required() + pp[t], n_par, fs.tool_bits()[static_cast<std::size_t>(t)], false,
                            params_);
      local += static_cast<std::size_t>(n_par);
    }
  }

  // Every need's share of the list, its top k: score descending, then catalogue order.
  top_idx.resize(std::min(k, nc));
  top_score.resize(top_idx.size());
  top_reading.resize(top_idx.size());
  const std::size_t kk =
      combine_needs_top(block.data(), R, nc, k, top_idx.data(), top_score.data(), breakdown ? top_reading.data() : nullptr);
  out.ptr = {0, static_cast<int64_t>(kk)};
  out.tool.resize(kk);
  out.score.resize(kk);
  out.matched.resize(kk);
  out.lexical.resize(kk);
  out.cos.assign(3 * kk, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t j = 0; j < kk; ++j) {
    const auto i = static_cast<std::size_t>(top_idx[j]);
    const int64_t t = cand[i];
    out.tool[j] = t;
    out.score[j] = top_score[j];
    out.matched[j] = found[i];
    out.lexical[j] = std::binary_search(lex.begin(), lex.end(), t) ? 1 : 0;
    for (int f = 0; f < 3; ++f) {
      if (cos_max[f].empty()) continue;
      if (std::binary_search(dense_cand[f].begin(), dense_cand[f].end(), t)) {
        out.cos[3 * j + static_cast<std::size_t>(f)] = cos_max[f][i];
      }
    }
  }
  out.terms.clear();
  if (breakdown) {
    // Each hit's terms from its reading: that reading's field scores of the hit (the BM25
    // half, its cosines mixed in as above) through the same MFTR call.
    first_par.resize(nc);
    std::size_t local = 0;
    for (std::size_t i = 0; i < nc; ++i) {
      first_par[i] = static_cast<int64_t>(local);
      local += static_cast<std::size_t>(pp[cand[i] + 1] - pp[cand[i]]);
    }
    out.terms.resize(5 * kk);
    for (std::size_t j = 0; j < kk; ++j) {
      const auto i = static_cast<std::size_t>(top_idx[j]);
      const auto r = static_cast<std::size_t>(top_reading[j]);
      float s3[3];
      for (int f = 0; f < 3; ++f) {
        const DenseHalf& h = half_[f];
        s3[f] = bm[f][i];
        if (!h.hybrid) continue;
        float c = 0.0f;
        if (h.has_cos) dense_cos(h, q_codes.data() + r * d, q_scales.data() + r, cand.data() + i, 1, rows, row_cos, &c);
        mix_cos(s3 + f, h.has_cos ? &c : nullptr, 1, h.w_bm, h.w_cos);
      }
      const int64_t t = cand[i];
      const int64_t n_par = pp[t + 1] - pp[t];
      const float* ab = na > 0 && n_par > 0 ? par.data() + first_par[i] : nullptr;
      mftr_score(s3, s3 + 1, s3 + 2, 1, 1, ab, na, fs.param_required() + pp[t], n_par,
                 fs.tool_bits()[static_cast<std::size_t>(t)], false, params_, out.terms.data() + 5 * j);
    }
  }
  return Status::kHits;
}

}  // namespace toolsift
