// One engine call per search (toolsift/fused.h): per query, every field's top-n tools,
// their union topped up to k in catalogue order, every field's scores of those tools,
// the MFTR combination and the top k.
#include "toolsift/fused.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "scoring_detail.h"
#include "toolsift/parallel.h"

namespace toolsift {
using detail::fail;

namespace {

// toolsift.kernels.mftr._sigmoid: exp() of a non-positive number only.
inline double sigmoid(double x) noexcept {
  if (x >= 0.0) return 1.0 / (1.0 + std::exp(-x));
  const double z = std::exp(x);
  return z / (1.0 + z);
}

void check_ptr(const int64_t* ptr, std::size_t n_queries, std::size_t n_texts, const std::string& what) {
  if (ptr == nullptr) fail(what + " must not be null");
  if (ptr[0] != 0) fail(what + "[0] must be 0");
  for (std::size_t q = 0; q < n_queries; ++q) {
    if (ptr[q + 1] < ptr[q]) fail(what + " decreases at query " + std::to_string(q));
  }
  if (static_cast<std::size_t>(ptr[n_queries]) != n_texts) {
    fail(what + "[-1]=" + std::to_string(ptr[n_queries]) + " but there are " + std::to_string(n_texts) + " texts");
  }
}

}  // namespace

namespace {

template <class T>
float mftr_formula(const float* desc, const float* resp, const float* ex, int64_t need_stride, int64_t n_needs,
                   const float* ap, int64_t n_args, const uint8_t* required, int64_t n_params, uint8_t bits,
                   bool penalize, const MftrParams& p, T* terms) noexcept {
  const double w_desc = p.weights[0], w_param = p.weights[1], w_resp = p.weights[2], w_ex = p.weights[3];
  const double w_abs = std::abs(w_desc) + std::abs(w_param) + std::abs(w_resp) + std::abs(w_ex);
  const bool has_penalty = p.w_req != 0.0 || p.w_opt != 0.0;
  double s_desc = 0.0, s_resp = 0.0, s_ex = 0.0;
  if (n_needs > 0) {
    s_desc = desc[0];
    s_resp = resp[0];
    s_ex = ex[0];
    for (int64_t r = 1; r < n_needs; ++r) {
      s_desc = std::max(s_desc, static_cast<double>(desc[r * need_stride]));
      s_resp = std::max(s_resp, static_cast<double>(resp[r * need_stride]));
      s_ex = std::max(s_ex, static_cast<double>(ex[r * need_stride]));
    }
  }
  double s_param = 0.0, pen = 0.0;
  if (n_params > 0 && n_args > 0) {
    const bool apply_penalty = has_penalty && penalize;
    double total = 0.0;
    double top = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < n_params; ++k) {
      double best = ap[k];
      for (int64_t a = 1; a < n_args; ++a) best = std::max(best, static_cast<double>(ap[a * n_params + k]));
      total += best;
      top = std::max(top, best);
      if (apply_penalty) {
        const double w = required[k] != 0 ? p.w_req : p.w_opt;
        pen += w * sigmoid(p.alpha * (p.tau - best));
      }
    }
    s_param = p.max_share * top + (1.0 - p.max_share) * (total / static_cast<double>(n_params));
  } else if (n_params > 0 && has_penalty && penalize) {
    for (int64_t k = 0; k < n_params; ++k) {
      const double w = required[k] != 0 ? p.w_req : p.w_opt;
      pen += w * sigmoid(p.alpha * p.tau);
    }
  }
  double out;
  if (p.renormalize) {
    const double e_desc = (bits & 1) ? w_desc * s_desc : 0.0;
    const double e_param = (bits & 2) ? w_param * s_param : 0.0;
    const double e_resp = (bits & 4) ? w_resp * s_resp : 0.0;
    const double e_ex = (bits & 8) ? w_ex * s_ex : 0.0;
    const double present = ((bits & 1) ? std::abs(w_desc) : 0.0) + ((bits & 2) ? std::abs(w_param) : 0.0) +
                           ((bits & 4) ? std::abs(w_resp) : 0.0) + ((bits & 8) ? std::abs(w_ex) : 0.0);
    const double scale = present > 0.0 ? w_abs / present : 1.0;
    out = scale * (e_desc + e_param + e_resp + e_ex) + p.bias - pen;
  } else {
    out = w_desc * s_desc + w_param * s_param + w_resp * s_resp + w_ex * s_ex + p.bias - pen;
  }
  if (terms != nullptr) {
    terms[0] = static_cast<T>(s_desc);
    terms[1] = static_cast<T>(s_param);
    terms[2] = static_cast<T>(s_resp);
    terms[3] = static_cast<T>(s_ex);
    terms[4] = static_cast<T>(pen);
  }
  return static_cast<float>(out);
}

}  // namespace

float mftr_score(const float* desc, const float* resp, const float* ex, int64_t need_stride, int64_t n_needs,
                 const float* ap, int64_t n_args, const uint8_t* required, int64_t n_params, uint8_t bits,
                 bool penalize, const MftrParams& p, float* terms) noexcept {
  return mftr_formula(desc, resp, ex, need_stride, n_needs, ap, n_args, required, n_params, bits, penalize, p, terms);
}

float mftr_score(const float* desc, const float* resp, const float* ex, int64_t need_stride, int64_t n_needs,
                 const float* ap, int64_t n_args, const uint8_t* required, int64_t n_params, uint8_t bits,
                 bool penalize, const MftrParams& p, double* terms) noexcept {
  return mftr_formula(desc, resp, ex, need_stride, n_needs, ap, n_args, required, n_params, bits, penalize, p, terms);
}

// Per field of at most InvertedIndex::kSumDocs documents: each text's dense row of raw
// sums (all zero between searches) and the documents it touched.
struct FieldSums {
  std::vector<std::vector<float>> acc;
  std::vector<std::vector<int32_t>> touched;
  std::vector<float> best;  // per group, all zero between uses
};

struct FusedSearcher::Scratch {
  FieldSums sums[4];
  std::vector<int64_t> cand;
  std::vector<int64_t> merged;
  std::vector<uint8_t> found;
  std::vector<float> sims[3];
  std::vector<float> cos;
  // Hybrid searches: the BM25 candidates, each need field's dense candidates (sorted,
  // distinct) and each need field's cosine of every candidate (max over the texts).
  std::vector<int64_t> lex;
  std::vector<int64_t> dense_cand[3];
  std::vector<float> cos_max[3];
  std::vector<float> row_cos;
  std::vector<int64_t> rows;
  std::vector<int64_t> docs;
  std::vector<float> par;
  std::vector<float> score;
  std::vector<uint32_t> order;
};

FusedSearcher::FusedSearcher(std::shared_ptr<const InvertedIndex> need[3], std::shared_ptr<const InvertedIndex> params,
                             const int64_t* param_ptr, std::size_t n_tools, const uint8_t* param_required,
                             const uint8_t* tool_bits)
    : params_(std::move(params)), n_tools_(n_tools) {
  for (int f = 0; f < 3; ++f) {
    if (!need[f]) fail("fused search: a need field's index is missing");
    need_[f] = need[f];
    if (need_[f]->n_groups() != n_tools) {
      fail("fused search: need field " + std::to_string(f) + " has " + std::to_string(need_[f]->n_groups()) +
           " tools, not " + std::to_string(n_tools));
    }
  }
  if (!params_) fail("fused search: the parameters index is missing");
  if (params_->n_groups() != n_tools) fail("fused search: the parameters index does not group its documents by tool");
  if (param_ptr == nullptr || param_ptr[0] != 0) fail("fused search: param_ptr must start at 0");
  for (std::size_t t = 0; t < n_tools; ++t) {
    if (param_ptr[t + 1] < param_ptr[t]) fail("fused search: param_ptr decreases at tool " + std::to_string(t));
  }
  const auto n_params = static_cast<std::size_t>(param_ptr[n_tools]);
  if (n_params != params_->n_docs()) {
    fail("fused search: param_ptr[-1]=" + std::to_string(n_params) + " but the parameters index has " +
         std::to_string(params_->n_docs()) + " documents");
  }
  param_ptr_.assign(param_ptr, param_ptr + n_tools + 1);
  param_required_.assign(param_required, param_required + n_params);
  tool_bits_.assign(tool_bits, tool_bits + n_tools);
}

FusedSearcher::~FusedSearcher() = default;

void FusedSearcher::check(const FusedBatch& b) const {
  const std::size_t nq = b.n_queries;
  const char* names[3] = {"description", "response", "examples"};
  for (int f = 0; f < 4; ++f) {
    const FieldQueries& fq = f < 3 ? b.need[f] : b.params;
    const InvertedIndex& idx = f < 3 ? *need_[f] : *params_;
    const std::string what = f < 3 ? names[f] : "parameters";
    if (fq.texts.offsets == nullptr) fail(what + ": offsets must not be null");
    const std::size_t n_terms = static_cast<std::size_t>(fq.texts.offsets[fq.texts.n_queries]);
    idx.check_batch(fq.texts, n_terms);
    check_ptr(fq.text_ptr, nq, fq.texts.n_queries, what + " text_ptr");
  }
  for (std::size_t q = 0; q < nq; ++q) {
    const int64_t nn = b.need[0].text_ptr[q + 1] - b.need[0].text_ptr[q];
    for (int f = 1; f < 3; ++f) {
      if (b.need[f].text_ptr[q + 1] - b.need[f].text_ptr[q] != nn) {
        fail("query " + std::to_string(q) + " has a different number of texts in the need fields");
      }
    }
  }
}

std::unique_ptr<FusedSearcher::Scratch> FusedSearcher::acquire() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      auto s = std::move(free_.back());
      free_.pop_back();
      return s;
    }
  }
  return std::make_unique<Scratch>();
}

void FusedSearcher::give_back(std::unique_ptr<Scratch> s) const {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(s));
}

void FusedSearcher::search(const FusedBatch& b, const MftrParams& p, const FusedOptions& o, FusedHits& out) const {
  const std::size_t nq = b.n_queries;
  if (nq == 1) {  // a single search: straight into the output
    auto s = acquire();
    search_one(b, 0, p, o, *s, out);
    give_back(std::move(s));
    out.ptr = {0, static_cast<int64_t>(out.tool.size())};
    return;
  }
  std::vector<FusedHits> per(nq);
  parallel_chunks(nq, o.threads, detail::kMinQueriesPerThread, [&](int, std::size_t lo, std::size_t hi) {
    auto s = acquire();
    for (std::size_t q = lo; q < hi; ++q) search_one(b, q, p, o, *s, per[q]);
    give_back(std::move(s));
  });
  out.ptr.assign(nq + 1, 0);
  for (std::size_t q = 0; q < nq; ++q) out.ptr[q + 1] = out.ptr[q] + static_cast<int64_t>(per[q].tool.size());
  out.tool.clear();
  out.score.clear();
  out.matched.clear();
  out.lexical.clear();
  out.cos.clear();
  out.terms.clear();
  for (std::size_t q = 0; q < nq; ++q) {
    const FusedHits& h = per[q];
    out.terms.insert(out.terms.end(), h.terms.begin(), h.terms.end());
    out.tool.insert(out.tool.end(), h.tool.begin(), h.tool.end());
    out.score.insert(out.score.end(), h.score.begin(), h.score.end());
    out.matched.insert(out.matched.end(), h.matched.begin(), h.matched.end());
    out.lexical.insert(out.lexical.end(), h.lexical.begin(), h.lexical.end());
    out.cos.insert(out.cos.end(), h.cos.begin(), h.cos.end());
  }
}

void sort_unique(std::vector<int64_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

void sort_unique(std::vector<int64_t>& v, std::size_t n_keys) {
  constexpr std::size_t kMaxBitmapKeys = std::size_t{1} << 18;  // 32 KB of bits, read in ~2 us
  if (v.size() < 64 || n_keys > kMaxBitmapKeys) {
    sort_unique(v);
    return;
  }
  thread_local std::vector<uint64_t> bits;  // all zero between calls
  const std::size_t words = (n_keys + 63) / 64;
  if (bits.size() < words) bits.resize(words, 0);
  for (const int64_t x : v) bits[static_cast<std::size_t>(x) >> 6] |= uint64_t{1} << (x & 63);
  v.clear();
  for (std::size_t w = 0; w < words; ++w) {
    uint64_t b = bits[w];
    if (b == 0) continue;
    bits[w] = 0;
    for (; b != 0; b &= b - 1) {
      v.push_back(static_cast<int64_t>(64 * w + static_cast<std::size_t>(__builtin_ctzll(b))));
    }
  }
}

bool append_dense(std::vector<int64_t>& dc, std::vector<int64_t>& cand) {
  sort_unique(dc);
  cand.insert(cand.end(), dc.begin(), dc.end());
  return !dc.empty();
}

void top_up(std::vector<int64_t>& cand, std::size_t want, std::vector<uint8_t>& found, std::vector<int64_t>& merged) {
  found.assign(cand.size(), 1);
  if (cand.size() >= want) return;
  merged.clear();
  found.clear();
  std::size_t i = 0, extra = want - cand.size();
  for (int64_t t = 0; i < cand.size() || extra > 0; ++t) {
    if (i < cand.size() && cand[i] == t) {
      merged.push_back(t);
      found.push_back(1);
      ++i;
    } else if (extra > 0) {
      merged.push_back(t);
      found.push_back(0);
      --extra;
    } else {
      // No more additions: the remaining candidates follow as they are.
      merged.insert(merged.end(), cand.begin() + static_cast<std::ptrdiff_t>(i), cand.end());
      found.insert(found.end(), cand.size() - i, 1);
      break;
    }
  }
  cand.swap(merged);
}

void mix_cos(float* row, const float* cos, std::size_t n, float w_bm, float w_cos) noexcept {
  if (cos == nullptr) {
    for (std::size_t i = 0; i < n; ++i) row[i] = row[i] * w_bm;
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const float a = row[i] * w_bm;
    const float c = std::max(cos[i], 0.0f) * w_cos;
    row[i] = a + c;
  }
}

void dense_cos(const DenseHalf& d, const int8_t* qc, const float* qs, const int64_t* cand, std::size_t nc,
               std::vector<int64_t>& rows, std::vector<float>& row_cos, float* out) {
  if (d.tool_ptr == nullptr) {
    const int64_t ptr[2] = {0, static_cast<int64_t>(nc)};
    int8_gather(qc, qs, 1, d.rows, ptr, cand, out, 1);
    return;
  }
  rows.clear();
  for (std::size_t i = 0; i < nc; ++i) {
    for (int64_t j = d.tool_ptr[cand[i]]; j < d.tool_ptr[cand[i] + 1]; ++j) rows.push_back(j);
  }
  row_cos.resize(rows.size());
  const int64_t ptr[2] = {0, static_cast<int64_t>(rows.size())};
  if (!rows.empty()) int8_gather(qc, qs, 1, d.rows, ptr, rows.data(), row_cos.data(), 1);
  std::size_t j = 0;
  for (std::size_t i = 0; i < nc; ++i) {
    const int64_t m = d.tool_ptr[cand[i] + 1] - d.tool_ptr[cand[i]];
    float best = 0.0f;
    if (m > 0) {
      best = row_cos[j];
      for (int64_t x = 1; x < m; ++x) best = std::max(best, row_cos[j + static_cast<std::size_t>(x)]);
    }
    out[i] = best;
    j += static_cast<std::size_t>(m);
  }
}

void FusedSearcher::mix_dense(const HybridInputs& h, int64_t n0, int64_t nn, Scratch& s) const {
  // toolsift.search.candidates._mix_dense: the same int8 gathers (one row per tool, or
  // every row of each candidate and the max per tool) and HybridRetriever.mix's float32
  // operations, in its order (this file is compiled without FMA contraction).
  const auto& cand = s.cand;
  const std::size_t nc = cand.size();
  for (int f = 0; f < 3; ++f) {
    const DenseHalf& d = h.need[f];
    s.cos_max[f].clear();
    if (!d.hybrid) continue;
    if (d.has_cos) s.cos_max[f].assign(nc, -std::numeric_limits<float>::infinity());
    for (int64_t r = 0; r < nn; ++r) {
      float* row = s.sims[f].data() + static_cast<std::size_t>(r) * nc;
      if (!d.has_cos) {
        mix_cos(row, nullptr, nc, d.w_bm, d.w_cos);
        continue;
      }
      const std::size_t t = static_cast<std::size_t>(n0 + r);
      s.cos.resize(nc);
      dense_cos(d, d.q_codes + t * d.rows.d, d.q_scales + t, cand.data(), nc, s.rows, s.row_cos, s.cos.data());
      float* cm = s.cos_max[f].data();
      for (std::size_t i = 0; i < nc; ++i) cm[i] = std::max(cm[i], s.cos[i]);
      mix_cos(row, s.cos.data(), nc, d.w_bm, d.w_cos);
    }
  }
}

void FusedSearcher::search_one(const FusedBatch& b, std::size_t q, const MftrParams& p, const FusedOptions& o,
                               Scratch& s, FusedHits& out) const {
  // Candidates: every text's top-n tools in every field (toolsift.search.candidates).
  // A small field sums each text's postings once into a dense row that later gives the
  // candidates' scores too; a large one takes top_text now and gather_texts later.
  auto& cand = s.cand;
  cand.clear();
  bool dense[4];
  for (int f = 0; f < 4; ++f) {
    const FieldQueries& fq = f < 3 ? b.need[f] : b.params;
    const InvertedIndex& idx = f < 3 ? *need_[f] : *params_;
    const int64_t t0 = fq.text_ptr[q], nt = fq.text_ptr[q + 1] - t0;
    dense[f] = idx.n_docs() <= o.sum_docs;
    FieldSums& fs = s.sums[f];
    if (dense[f] && nt > 0) {
      if (fs.acc.size() < static_cast<std::size_t>(nt)) {
        fs.acc.resize(static_cast<std::size_t>(nt));
        fs.touched.resize(static_cast<std::size_t>(nt));
      }
      if (fs.best.size() < idx.n_groups()) fs.best.resize(idx.n_groups(), 0.0f);
    }
    for (int64_t i = 0; i < nt; ++i) {
      const int64_t a = fq.texts.offsets[t0 + i], e = fq.texts.offsets[t0 + i + 1];
      const int32_t* terms = fq.texts.terms + a;
      const auto m = static_cast<std::size_t>(e - a);
      if (dense[f]) {
        auto& acc = fs.acc[static_cast<std::size_t>(i)];
        if (acc.size() < idx.n_docs()) acc.resize(idx.n_docs(), 0.0f);
        auto& touched = fs.touched[static_cast<std::size_t>(i)];
        idx.sum_text(terms, m, acc.data(), touched);
        idx.top_from_sums(acc.data(), touched, terms, m, o.n, o.scale, true, fs.best.data(), cand);
      } else {
        idx.top_text(terms, m, o.n, o.scale, true, Prune::kAuto, cand);
      }
    }
  }
  sort_unique(cand, n_tools_);
  if (b.hybrid != nullptr) {
    // The dense halves' candidates (toolsift.search.candidates.find_candidates), kept
    // apart from the BM25 ones for the hits' evidence.
    const HybridInputs& h = *b.hybrid;
    s.lex.assign(cand.begin(), cand.end());
    bool added = false;
    for (int f = 0; f < 3; ++f) {
      auto& dc = s.dense_cand[f];
      dc.clear();
      if (h.extra_ptr[f] == nullptr) continue;
      dc.assign(h.extra_ids[f] + h.extra_ptr[f][q], h.extra_ids[f] + h.extra_ptr[f][q + 1]);
      added = append_dense(dc, cand) || added;
    }
    if (added) sort_unique(cand, n_tools_);
  }
  // Top-up: the first tools in catalogue order that are not candidates, until there are
  // min(k, n_tools) (toolsift.search.candidates._top_up); they are not "matched".
  auto& found = s.found;
  top_up(cand, std::min(o.k, n_tools_), found, s.merged);
  const std::size_t nc = cand.size();

  // Every field's scores of the candidates (toolsift.search.candidates.pack).
  const int64_t n0 = b.need[0].text_ptr[q], nn = b.need[0].text_ptr[q + 1] - n0;
  for (int f = 0; f < 3; ++f) {
    const FieldQueries& fq = b.need[f];
    const InvertedIndex& idx = *need_[f];
    s.sims[f].resize(static_cast<std::size_t>(nn) * nc);
    if (!dense[f]) {
      idx.gather_texts(fq.texts, fq.text_ptr[q], fq.text_ptr[q + 1], cand.data(), nc, o.scale, true, s.sims[f].data());
      continue;
    }
    for (int64_t r = 0; r < nn; ++r) {
      const int64_t a = fq.texts.offsets[n0 + r], e = fq.texts.offsets[n0 + r + 1];
      const detail::Scaler scaled(o.scale, idx.upper_bound(fq.texts.terms + a, static_cast<std::size_t>(e - a)),
                                  idx.params().k1);
      const float* acc = s.sums[f].acc[static_cast<std::size_t>(r)].data();
      float* row = s.sims[f].data() + static_cast<std::size_t>(r) * nc;
      for (std::size_t i = 0; i < nc; ++i) {
        // f(0) is +0 on every scale: no expm1 for the many candidates a field misses.
        const float v = idx.group_sum(acc, cand[i]);
        row[i] = v == 0.0f ? 0.0f : scaled(v);
      }
    }
  }
  if (b.hybrid != nullptr) mix_dense(*b.hybrid, n0, nn, s);
  const int64_t a0 = b.params.text_ptr[q], na = b.params.text_ptr[q + 1] - a0;
  const int64_t* pp = param_ptr_.data();
  std::size_t nd = 0;
  if (na > 0) {
    s.docs.clear();
    for (const int64_t t : cand) {
      for (int64_t d = pp[t]; d < pp[t + 1]; ++d) s.docs.push_back(d);
    }
    nd = s.docs.size();
    s.par.resize(static_cast<std::size_t>(na) * nd);
    if (nd > 0 && !dense[3]) {
      params_->gather_texts(b.params.texts, a0, a0 + na, s.docs.data(), nd, o.scale, false, s.par.data());
    } else if (nd > 0) {
      for (int64_t r = 0; r < na; ++r) {
        const int64_t a = b.params.texts.offsets[a0 + r], e = b.params.texts.offsets[a0 + r + 1];
        const auto m = static_cast<std::size_t>(e - a);
        const detail::Scaler scaled(o.scale, params_->upper_bound(b.params.texts.terms + a, m), params_->params().k1);
        const float* acc = s.sums[3].acc[static_cast<std::size_t>(r)].data();
        float* row = s.par.data() + static_cast<std::size_t>(r) * nd;
        for (std::size_t j = 0; j < nd; ++j) {
          const float v = std::max(0.0f, acc[s.docs[j]]);
          row[j] = v == 0.0f ? 0.0f : scaled(v);
        }
      }
    }
  }
  // The rows go back to all zeros for the next search.
  for (int f = 0; f < 4; ++f) {
    FieldSums& fs = s.sums[f];
    for (std::size_t i = 0; i < fs.touched.size(); ++i) {
      if (!fs.touched[i].empty()) InvertedIndex::clear_sums(fs.acc[i].data(), fs.touched[i]);
    }
  }

  // MFTR per candidate. The parameters block of candidate i starts at its first
  // parameter within the candidates' documents; argument a's row is nd further on.
  auto& score = s.score;
  score.resize(nc);
  thread_local std::vector<float> ap;
  thread_local std::vector<std::size_t> first_par;  // candidate -> its first parameter column
  const bool penalize = b.penalize[q] != 0;
  first_par.resize(nc);
  // Candidate i's arg-major argument x parameter block (null: none), as the kernel's
  // packing lays it out.
  const auto block_of = [&](std::size_t i) -> const float* {
    const int64_t t = cand[i];
    const int64_t n_par = pp[t + 1] - pp[t];
    if (na <= 0 || n_par <= 0) return nullptr;
    ap.resize(static_cast<std::size_t>(na * n_par));
    for (int64_t a = 0; a < na; ++a) {
      const float* src = s.par.data() + static_cast<std::size_t>(a) * nd + first_par[i];
      std::copy(src, src + n_par, ap.data() + a * n_par);
    }
    return ap.data();
  };
  std::size_t local = 0;
  for (std::size_t i = 0; i < nc; ++i) {
    const int64_t t = cand[i];
    const int64_t n_par = pp[t + 1] - pp[t];
    first_par[i] = local;
    score[i] = mftr_score(s.sims[0].data() + i, s.sims[1].data() + i, s.sims[2].data() + i, static_cast<int64_t>(nc),
                          nn, block_of(i), na, param_required_.data() + pp[t], n_par,
                          tool_bits_[static_cast<std::size_t>(t)], penalize, p);
    local += static_cast<std::size_t>(n_par);
  }

  // Top k: score descending, then catalogue position (toolsift.search.hits.rank); the
  // candidates are in catalogue order, so position order is tool order.
  auto& order = s.order;
  order.resize(nc);
  for (std::size_t i = 0; i < nc; ++i) order[i] = static_cast<uint32_t>(i);
  const std::size_t kk = std::min(o.k, nc);
  const auto better = [&](uint32_t x, uint32_t y) { return score[x] > score[y] || (score[x] == score[y] && x < y); };
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk), order.end(), better);
  out.tool.resize(kk);
  out.score.resize(kk);
  out.matched.resize(kk);
  for (std::size_t r = 0; r < kk; ++r) {
    out.tool[r] = cand[order[r]];
    out.score[r] = score[order[r]];
    out.matched[r] = found[order[r]];
  }
  out.terms.clear();
  if (o.breakdown) {
    // The hits' terms: the same call on the same inputs as their scores above.
    out.terms.resize(5 * kk);
    for (std::size_t r = 0; r < kk; ++r) {
      const std::size_t i = order[r];
      const int64_t t = cand[i];
      mftr_score(s.sims[0].data() + i, s.sims[1].data() + i, s.sims[2].data() + i, static_cast<int64_t>(nc), nn,
                 block_of(i), na, param_required_.data() + pp[t], pp[t + 1] - pp[t],
                 tool_bits_[static_cast<std::size_t>(t)], penalize, p, out.terms.data() + 5 * r);
    }
  }
  if (b.hybrid == nullptr) return;
  // Each hit's evidence: a BM25 candidate, or the cosine of every need field whose dense
  // half added it (toolsift.search.evidence compares these with the null floors).
  out.lexical.resize(kk);
  out.cos.assign(3 * kk, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t r = 0; r < kk; ++r) {
    const int64_t t = cand[order[r]];
    out.lexical[r] = std::binary_search(s.lex.begin(), s.lex.end(), t) ? 1 : 0;
    for (int f = 0; f < 3; ++f) {
      if (s.cos_max[f].empty()) continue;
      const auto& dc = s.dense_cand[f];
      if (std::binary_search(dc.begin(), dc.end(), t)) {
        out.cos[3 * r + static_cast<std::size_t>(f)] = s.cos_max[f][order[r]];
      }
    }
  }
}

}  // namespace toolsift
