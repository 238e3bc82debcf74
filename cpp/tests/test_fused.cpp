// The fused search against its definition: every tool's field scores from score_dense
// (the index's reference path), combined by mftr_score, ranked by score then position;
// and mftr_score against values worked out by hand.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "check.h"
#include "toolsift/fused.h"
#include "toolsift/inverted_index.h"

using namespace toolsift;

namespace {

// A field of `n_docs` random documents over `n_terms` terms, grouped by `group`.
std::shared_ptr<const InvertedIndex> random_field(std::mt19937& rng, const std::vector<int32_t>& group,
                                                  int32_t n_groups,
                                                  int32_t n_terms, int max_len) {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::uniform_int_distribution<int> len(0, max_len);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t d = 0; d < group.size(); ++d) {
    const int n = len(rng);
    for (int i = 0; i < n; ++i) {
      tokens.push_back(std::min(n_terms - 1, static_cast<int32_t>(std::pow(u(rng), 2.0) * n_terms)));
    }
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  return std::make_shared<InvertedIndex>(InvertedIndex::build(tokens.data(), offsets.data(), group.size(), n_terms,
                                                              group.data(), true, n_groups, Bm25Params{}));
}

std::vector<int32_t> random_text(std::mt19937& rng, int32_t n_terms, int len) {
  std::uniform_int_distribution<int32_t> term(-1, n_terms - 1);
  std::vector<int32_t> t;
  for (int i = 0; i < len; ++i) t.push_back(term(rng));
  return t;
}

}  // namespace

TEST_CASE("mftr_score: fields, parameter max/mean, penalty, bias") {
  MftrParams p;
  p.weights[0] = 0.5;
  p.weights[1] = 0.25;
  p.weights[2] = 0.125;
  p.weights[3] = 0.125;
  p.bias = 0.1;
  p.alpha = 2.0;
  p.tau = 0.5;
  p.w_req = 0.2;
  p.w_opt = 0.1;
  p.max_share = 0.5;
  // Two needs (rows of stride 1 per field), two args x two params (arg-major).
  const float desc[2] = {0.25f, 0.5f}, resp[2] = {0.75f, 0.5f}, ex[2] = {0.0f, 0.25f};
  const float ap[4] = {0.5f, 0.0f, 0.25f, 1.0f};  // param maxima: 0.5, 1.0
  const uint8_t required[2] = {1, 0};
  const float got = mftr_score(desc, resp, ex, 1, 2, ap, 2, required, 2, 15, true, p);
  const double s_param = 0.5 * 1.0 + 0.5 * 0.75;
  const auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  const double pen = 0.2 * sig(2.0 * (0.5 - 0.5)) + 0.1 * sig(2.0 * (0.5 - 1.0));
  const double want = 0.5 * 0.5 + 0.25 * s_param + 0.125 * 0.75 + 0.125 * 0.25 + 0.1 - pen;
  CHECK_NEAR(got, want, 1e-6);
  // No penalty flag: the same without pen.
  CHECK_NEAR(mftr_score(desc, resp, ex, 1, 2, ap, 2, required, 2, 15, false, p), want + pen, 1e-6);
  // Renormalisation: a tool with only a description puts every weight on it.
  p.renormalize = true;
  CHECK_NEAR(mftr_score(desc, resp, ex, 1, 2, ap, 0, required, 0, 1, false, p), 1.0 * 0.5 + 0.1, 1e-6);
}

TEST_CASE("fused search equals score_dense + mftr_score over every tool") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    const int32_t n_tools = 5 + static_cast<int32_t>(rng() % 60), n_terms = 40;
    std::vector<int32_t> tool_group(static_cast<std::size_t>(n_tools));
    for (int32_t t = 0; t < n_tools; ++t) tool_group[static_cast<std::size_t>(t)] = t;
    // Examples: 0-3 documents per tool; parameters: 0-4 per tool.
    std::vector<int32_t> ex_group, par_group;
    std::vector<int64_t> param_ptr{0};
    for (int32_t t = 0; t < n_tools; ++t) {
      for (int i = static_cast<int>(rng() % 4); i > 0; --i) ex_group.push_back(t);
      for (int i = static_cast<int>(rng() % 5); i > 0; --i) par_group.push_back(t);
      param_ptr.push_back(static_cast<int64_t>(par_group.size()));
    }
    std::shared_ptr<const InvertedIndex> need[3] = {random_field(rng, tool_group, n_tools, n_terms, 12),
                                                    random_field(rng, tool_group, n_tools, n_terms, 6),
                                                    random_field(rng, ex_group, n_tools, n_terms, 8)};
    auto params = random_field(rng, par_group, n_tools, n_terms, 5);
    std::vector<uint8_t> required(par_group.size()), bits(static_cast<std::size_t>(n_tools));
    for (auto& r : required) r = static_cast<uint8_t>(rng() % 2);
    for (auto& b : bits) b = static_cast<uint8_t>(1 + rng() % 15);
    const FusedSearcher fs(need, params, param_ptr.data(), static_cast<std::size_t>(n_tools), required.data(),
                           bits.data());

    const int nn = 1 + static_cast<int>(rng() % 3), na = static_cast<int>(rng() % 3);
    std::vector<int32_t> nterms[3], pterms;
    std::vector<int64_t> noff[3], poff{0};
    for (int f = 0; f < 3; ++f) {
      noff[f].push_back(0);
      for (int r = 0; r < nn; ++r) {
        const auto t = random_text(rng, n_terms, 1 + static_cast<int>(rng() % 6));
        nterms[f].insert(nterms[f].end(), t.begin(), t.end());
        noff[f].push_back(static_cast<int64_t>(nterms[f].size()));
      }
    }
    for (int a = 0; a < na; ++a) {
      const auto t = random_text(rng, n_terms, 1 + static_cast<int>(rng() % 4));
      pterms.insert(pterms.end(), t.begin(), t.end());
      poff.push_back(static_cast<int64_t>(pterms.size()));
    }
    const int64_t need_ptr[2] = {0, nn}, arg_ptr[2] = {0, na};
    const uint8_t penalize = static_cast<uint8_t>(trial % 2);
    FusedBatch b;
    for (int f = 0; f < 3; ++f) {
      b.need[f] = FieldQueries{QueryBatch{nterms[f].data(), noff[f].data(), static_cast<std::size_t>(nn)}, need_ptr};
    }
    b.params = FieldQueries{QueryBatch{pterms.data(), poff.data(), static_cast<std::size_t>(na)}, arg_ptr};
    b.penalize = &penalize;
    b.n_queries = 1;
    fs.check(b);
    MftrParams p;
    p.weights[0] = 0.6;
    p.weights[1] = 0.3;
    p.weights[2] = 0.2;
    p.weights[3] = 0.4;
    p.bias = -0.05;
    p.alpha = 10.0;
    p.tau = 0.4;
    p.w_req = 0.1;
    p.w_opt = 0.02;
    p.max_share = 0.3;
    p.renormalize = trial % 3 == 0;
    FusedOptions o;
    o.n = static_cast<std::size_t>(n_tools);  // every matched tool is a candidate
    o.k = 1 + rng() % static_cast<unsigned>(n_tools + 3);
    o.scale = static_cast<Scale>(trial % 3);
    FusedHits got, postings;
    fs.search(b, p, o, got);
    // Both per-field strategies: dense rows of sums (these small fields) and postings.
    o.sum_docs = 0;
    fs.search(b, p, o, postings);
    CHECK(got.tool == postings.tool);
    CHECK(got.score == postings.score);
    CHECK(got.matched == postings.matched);
    // A candidate cut (the raw-floor selection of top_from_sums against top_one).
    for (std::size_t cut : {std::size_t{1}, std::size_t{2}, std::size_t{5}}) {
      FusedOptions c = o;
      c.n = cut;
      FusedHits a, z;
      fs.search(b, p, c, a);
      c.sum_docs = std::size_t{1} << 20;
      fs.search(b, p, c, z);
      CHECK(a.tool == z.tool);
      CHECK(a.score == z.score);
    }
    o.sum_docs = std::size_t{1} << 20;

    // Reference: dense scores of every tool and parameter document.
    const std::size_t nt = static_cast<std::size_t>(n_tools), nd = par_group.size();
    std::vector<float> sims[3];
    for (int f = 0; f < 3; ++f) {
      sims[f].resize(static_cast<std::size_t>(nn) * nt);
      need[f]->score_dense(b.need[f].texts, o.scale, true, sims[f].data(), 1);
    }
    std::vector<float> par(static_cast<std::size_t>(na) * nd);
    if (na > 0 && nd > 0) params->score_dense(b.params.texts, o.scale, false, par.data(), 1);
    std::vector<float> score(nt);
    std::vector<uint8_t> matched(nt, 0);
    for (std::size_t t = 0; t < nt; ++t) {
      std::vector<float> d(static_cast<std::size_t>(nn)), r(d.size()), e(d.size());
      for (int q = 0; q < nn; ++q) {
        d[static_cast<std::size_t>(q)] = sims[0][q * nt + t];
        r[static_cast<std::size_t>(q)] = sims[1][q * nt + t];
        e[static_cast<std::size_t>(q)] = sims[2][q * nt + t];
        const auto j = static_cast<std::size_t>(q);
        if (d[j] > 0 || r[j] > 0 || e[j] > 0) matched[t] = 1;
      }
      const int64_t p0 = param_ptr[t], np_ = param_ptr[t + 1] - p0;
      std::vector<float> ap(static_cast<std::size_t>(na * np_));
      for (int a = 0; a < na; ++a) {
        for (int64_t k = 0; k < np_; ++k) {
          const auto j = static_cast<std::size_t>(a * np_ + k);
          ap[j] = par[static_cast<std::size_t>(a) * nd + static_cast<std::size_t>(p0 + k)];
          if (ap[j] > 0) matched[t] = 1;
        }
      }
      score[t] = mftr_score(d.data(), r.data(), e.data(), 1, nn, ap.data(), na, required.data() + p0, np_, bits[t],
                            penalize != 0, p);
    }
    // Candidates: the matched tools, topped up in catalogue order to min(k, n_tools).
    std::vector<int32_t> cand;
    std::size_t n_matched = 0;
    for (std::size_t t = 0; t < nt; ++t) n_matched += matched[t];
    std::size_t extra = std::min(o.k, nt) > n_matched ? std::min(o.k, nt) - n_matched : 0;
    for (std::size_t t = 0; t < nt; ++t) {
      if (matched[t]) {
        cand.push_back(static_cast<int32_t>(t));
      } else if (extra > 0) {
        cand.push_back(static_cast<int32_t>(t));
        --extra;
      }
    }
    std::stable_sort(cand.begin(), cand.end(), [&](int32_t x, int32_t y) {
      return score[static_cast<std::size_t>(x)] > score[static_cast<std::size_t>(y)];
    });
    cand.resize(std::min(cand.size(), o.k));
    CHECK_EQ(got.tool.size(), cand.size());
    for (std::size_t i = 0; i < std::min(cand.size(), got.tool.size()); ++i) {
      CHECK_EQ(got.tool[i], static_cast<int64_t>(cand[i]));
      CHECK_EQ(got.score[i], score[static_cast<std::size_t>(cand[i])]);
      CHECK_EQ(static_cast<int>(got.matched[i]), static_cast<int>(matched[static_cast<std::size_t>(cand[i])]));
    }
  }
}

TEST_CASE("fused search rejects bad batches") {
  std::mt19937 rng(3);
  std::vector<int32_t> g{0, 1, 2};
  std::shared_ptr<const InvertedIndex> need[3] = {random_field(rng, g, 3, 10, 4), random_field(rng, g, 3, 10, 4),
                                                  random_field(rng, g, 3, 10, 4)};
  std::vector<int32_t> pg{0, 2};
  auto params = random_field(rng, pg, 3, 10, 4);
  const int64_t param_ptr[4] = {0, 1, 1, 2};
  const uint8_t req[2] = {1, 0}, bits[3] = {15, 15, 15};
  const FusedSearcher fs(need, params, param_ptr, 3, req, bits);
  const int32_t terms[2] = {1, 99};  // 99 is not a term of these fields
  const int64_t off[2] = {0, 2}, ptr[2] = {0, 1}, none_off[1] = {0}, none_ptr[2] = {0, 0};
  const uint8_t pen = 0;
  FusedBatch b;
  for (int f = 0; f < 3; ++f) b.need[f] = FieldQueries{QueryBatch{terms, off, 1}, ptr};
  b.params = FieldQueries{QueryBatch{terms, none_off, 0}, none_ptr};
  b.penalize = &pen;
  b.n_queries = 1;
  CHECK_THROWS(fs.check(b), std::invalid_argument, "term id 99");
  const int64_t bad_param_ptr[4] = {0, 2, 1, 2};
  CHECK_THROWS(FusedSearcher(need, params, bad_param_ptr, 3, req, bits), std::invalid_argument, "param_ptr decreases");
}

TEST_CASE("sort_unique with a key bound equals sorting and dropping repeats") {
  std::mt19937 rng(7);
  const std::size_t bounds[] = {1, 63, 64, 65, 6417, std::size_t{1} << 18, (std::size_t{1} << 18) + 1, 1000000};
  for (const std::size_t n_keys : bounds) {
    for (const std::size_t size : {0, 1, 63, 64, 65, 500, 3000}) {
      std::uniform_int_distribution<int64_t> key(0, static_cast<int64_t>(n_keys) - 1);
      std::vector<int64_t> v(size);
      for (auto& x : v) x = key(rng);
      if (size > 2) v[1] = v[0];  // a repeat
      std::vector<int64_t> want = v;
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      sort_unique(v, n_keys);
      CHECK(v == want);
      // The bitmap is left clear: the next call on other keys is not polluted.
      std::vector<int64_t> again{static_cast<int64_t>(n_keys) - 1};
      again.insert(again.end(), 70, 0);
      sort_unique(again, n_keys);
      CHECK(again == (n_keys == 1 ? std::vector<int64_t>{0} : std::vector<int64_t>{0, static_cast<int64_t>(n_keys) - 1}));
    }
  }
}
