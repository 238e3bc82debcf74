// MaxScore top-n (Turtle & Flood 1995) for large fields.
//
// Document-at-a-time over the distinct query terms sorted by their maximal weight; once
// the n-th best score is known, terms whose summed maxima cannot reach it become
// "non-essential": the essential terms' postings are scattered window by window into a
// small accumulator, and only the documents they produce are looked up in the other
// terms. Bounds are sums of floats compared with a relative slack, and a document's exact
// score is summed in query-term order as score_dense sums it, so the ids and scores equal
// the exhaustive path's bit for bit (tests/test_candidates_core.py, cpp/tests/test_maxscore.cpp).
//
// Where the time went at a million documents (bench_scale's description and parameters
// fields, docs/results/scale-1M-2026-11-28e.md), and what this file does about it:
//  * per visited document, a data-dependent branch on its bound (most are dropped) and
//    a galloping lookup into the highest non-essential term's long list: the window's
//    documents are now filtered into a list without branches, and the two highest
//    non-essential terms' postings in the window are written to arrays of their own
//    (kArrayTerms), so their lookups are reads;
//  * the first floor's exact scores galloped every seed through every list, long ones
//    included: lists much longer than the seeds now count as 0 there, a lower bound.
// Block-max bounds (Ding & Suel 2011) were tried and did not pay there: a block's
// maximal weight was 0.8-0.95 of the term's (BM25 weights vary with tf and length within
// any 16-64 postings), so they dropped ~7% of the lookups for more work per document.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "scoring_detail.h"
#include "toolsift/inverted_index.h"

namespace toolsift {
namespace {

// Relative slack on summed float bounds: a float sum of m positive weights exceeds the
// exact sum by at most about m ulps, and pruning must never drop a document that the
// exhaustive path would rank.
inline double bound_slack(std::size_t m) { return 1.0 + static_cast<double>(m + 2) * 1.2e-7; }

// Documents per window (ids [base, base + kWindow)).
constexpr int32_t kWindow = 4096;
// Non-essential terms whose window postings are written to arrays. Per text at 1M tools
// (235 raw queries, top-100, one thread; the -e results file), description / parameters
// took 1.15 / 0.83 ms with none, 0.80 / 0.70 with one, 0.77 / 0.67 with two, 0.82 / 0.70
// with three: each further term's postings cost more to write than its lookups did.
constexpr std::size_t kArrayTerms = 2;
// The first floor's seed scores leave out lists longer than this many postings per seed
// (their weights count as 0). Per description text at 1M: 0.77 ms with every list,
// 0.72 leaving out those over 16 per seed, 0.74 over 4 (a lower floor, more documents).
constexpr int64_t kSeedListRatio = 16;

}  // namespace

void InvertedIndex::top_maxscore(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group,
                                 Scratch& s, std::vector<Hit>& hits) const {
  const detail::Scaler f(scale, upper_bound(terms, m), params_.k1);
  if (f.all_zero()) return;
  const int64_t* ip = cols_.indptr.data();
  const int32_t* docs = cols_.doc_ids.data();
  const float* w = weight_.data();
  const bool use_groups = group && grouped_;
  const int32_t* dg = use_groups ? cols_.doc_group.data() : nullptr;

  // Distinct terms with their multiplicity, by increasing bound; query position ->
  // distinct term, so a document's exact score is summed in query order.
  struct Term {
    int32_t t;
    int32_t count;
    double ub;
  };
  std::vector<Term> uniq;
  for (std::size_t i = 0; i < m; ++i) {
    const int32_t t = terms[i];
    if (t < 0 || max_weight_[t] == 0.0f) continue;
    std::size_t u = 0;
    while (u < uniq.size() && uniq[u].t != t) ++u;
    if (u == uniq.size()) uniq.push_back({t, 0, 0.0});
    ++uniq[u].count;
  }
  for (auto& u : uniq) u.ub = static_cast<double>(u.count) * max_weight_[u.t];
  std::sort(uniq.begin(), uniq.end(), [](const Term& a, const Term& b) { return a.ub < b.ub || (a.ub == b.ub && a.t < b.t); });
  const std::size_t nu = uniq.size();
  if (nu == 0) return;
  std::vector<int32_t> pos_to_u(m, -1);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t u = 0; u < nu; ++u) {
      if (uniq[u].t == terms[i]) pos_to_u[i] = static_cast<int32_t>(u);
    }
  }
  std::vector<int64_t> scan(nu), probe(nu), end(nu);
  std::vector<double> prefix(nu);
  std::vector<float> contrib(nu, 0.0f);
  for (std::size_t u = 0; u < nu; ++u) {
    scan[u] = probe[u] = ip[uniq[u].t];
    end[u] = ip[uniq[u].t + 1];
    prefix[u] = (u ? prefix[u - 1] : 0.0) + uniq[u].ub;
  }
  const double slack = bound_slack(2 * m + nu);

  s.need_groups(out_width(group));
  float* best = s.best.data();
  uint8_t* in_top = s.in_top.data();
  auto& tg = s.touched_groups;
  tg.clear();
  const auto cmp = [](const Hit& x, const Hit& y) { return detail::better(x, y); };
  std::set<Hit, decltype(cmp)> top(cmp);
  double floor = 0.0;  // raw scores below this cannot enter the top n
  std::size_t first_essential = 0;

  const auto offer = [&](int32_t d, float raw) {
    if (raw < floor) return;
    const float v = f(raw);
    if (!(v > 0.0f)) return;
    const int32_t g = use_groups ? dg[d] : d;
    if (v <= best[g]) return;  // a group's score is the max over its documents
    if (best[g] == 0.0f) tg.push_back(g);
    const float old = best[g];
    best[g] = v;
    if (in_top[g]) {
      top.erase(Hit{old, g});
      top.insert(Hit{v, g});
    } else if (top.size() < n) {
      top.insert(Hit{v, g});
      in_top[g] = 1;
    } else {
      const Hit worst = *top.rbegin();
      if (!detail::better(Hit{v, g}, worst)) return;
      top.erase(std::prev(top.end()));
      in_top[worst.id] = 0;
      top.insert(Hit{v, g});
      in_top[g] = 1;
    }
    if (top.size() == n) {
      const double fl = f.raw_floor(top.rbegin()->score);
      if (fl > floor) {
        floor = fl;
        while (first_essential < nu && prefix[first_essential] * slack < floor) ++first_essential;
      }
    }
  };

  // A first floor before the scan. The threshold otherwise rises only as the scan fills
  // its top n, so on a large field most of the postings are read while it is still low:
  // on bench_scale's 200k catalogue, at the final floor only ~20% of a raw query's
  // description postings were in essential terms. So score exactly, as the scan scores
  // them (each term's weight added in query order from 0), the documents likeliest to
  // rank: the heaviest postings of the highest-bound terms. Any n distinct ids' scores
  // bound the final n-th best from below, so the floor they give is one the scan would
  // also reach, and the result is unchanged; only fewer documents are read.
  {
    // Candidates: up to 2n heaviest postings of each of the (at most) two highest-bound
    // terms whose lists are short enough to select from cheaply.
    const std::size_t want = 2 * n;
    thread_local std::vector<std::pair<float, int32_t>> by_weight;
    thread_local std::vector<int32_t> seed;
    thread_local std::vector<std::pair<int32_t, float>> seeded;  // (id, best raw score)
    seed.clear();
    std::size_t used = 0;
    for (std::size_t u = nu; u-- > 0 && used < 2;) {
      const int64_t lo = ip[uniq[u].t], hi = ip[uniq[u].t + 1];
      if (hi - lo > static_cast<int64_t>(64 * want)) continue;
      ++used;
      by_weight.clear();
      for (int64_t j = lo; j < hi; ++j) by_weight.emplace_back(w[j], docs[j]);
      if (by_weight.size() > want) {
        std::nth_element(by_weight.begin(), by_weight.begin() + static_cast<std::ptrdiff_t>(want), by_weight.end(),
                         [](const auto& x, const auto& y) { return x.first > y.first; });
        by_weight.resize(want);
      }
      for (const auto& bw : by_weight) seed.push_back(bw.second);
    }
    std::sort(seed.begin(), seed.end());
    seed.erase(std::unique(seed.begin(), seed.end()), seed.end());
    if (seed.size() >= n) {
      // Scores with a cursor per term moving forward (the seeds are ascending). A list
      // much longer than the seeds would cost a far gallop per seed; its weights count
      // as 0 instead. Float addition is monotone, so the query-ordered sum without them
      // is at most the exact score: still a lower bound of these ids' final scores.
      std::vector<int64_t> at(nu);
      for (std::size_t u = 0; u < nu; ++u) at[u] = ip[uniq[u].t];
      const int64_t longest = static_cast<int64_t>(seed.size()) * kSeedListRatio;
      seeded.clear();
      for (const int32_t d : seed) {
        for (std::size_t u = 0; u < nu; ++u) {
          if (end[u] - ip[uniq[u].t] > longest) continue;  // contrib[u] stays 0
          at[u] = detail::gallop(docs, at[u], end[u], d);
          contrib[u] = at[u] < end[u] && docs[at[u]] == d ? w[at[u]] : 0.0f;
        }
        float score = 0.0f;
        for (std::size_t i = 0; i < m; ++i) {
          if (pos_to_u[i] >= 0) score += contrib[static_cast<std::size_t>(pos_to_u[i])];
        }
        seeded.emplace_back(use_groups ? dg[d] : d, score);
      }
      std::fill(contrib.begin(), contrib.end(), 0.0f);
      // One entry per id (a group's score is at least its best seeded document's), scaled
      // as offer() scales; the n-th best of those is what the scan's top n reaches at least.
      std::sort(seeded.begin(), seeded.end());
      std::size_t k = 0;
      for (std::size_t i = 0; i < seeded.size(); ++i) {
        if (k > 0 && seeded[k - 1].first == seeded[i].first) {
          seeded[k - 1].second = std::max(seeded[k - 1].second, seeded[i].second);
        } else {
          seeded[k++] = seeded[i];
        }
      }
      seeded.resize(k);
      for (auto& e : seeded) e.second = f(e.second);
      if (seeded.size() >= n) {
        std::nth_element(seeded.begin(), seeded.begin() + static_cast<std::ptrdiff_t>(n - 1), seeded.end(),
                         [](const auto& x, const auto& y) { return x.second > y.second; });
        const float bar = seeded[n - 1].second;
        if (bar > 0.0f) floor = std::max(floor, static_cast<double>(f.raw_floor(bar)));
      }
    }
  }
  while (first_essential < nu && prefix[first_essential] * slack < floor) ++first_essential;

  // Windows of documents: the essential terms' postings are scattered into a small
  // accumulator (cache resident), then the window's documents are visited in order and
  // only those whose bound reaches the threshold are looked up in the other terms.
  // s.acc holds the accumulator and kArrayTerms arrays of one weight per document, all
  // zero between uses.
  s.need_window((1 + kArrayTerms) * kWindow);
  float* wacc = s.acc.data();
  float* arrays = wacc + kWindow;
  std::vector<int64_t> ascan(scan), alo(nu);
  thread_local std::vector<int32_t> cand_r;
  thread_local std::vector<double> cand_p;
  cand_r.resize(kWindow);
  cand_p.resize(kWindow);
  uint64_t mark[kWindow / 64] = {};
  while (first_essential < nu) {
    const std::size_t fe = first_essential;  // fixed for the window: wacc holds terms [fe, nu)
    int32_t base = std::numeric_limits<int32_t>::max();
    for (std::size_t u = fe; u < nu; ++u) {
      if (scan[u] < end[u]) base = std::min(base, docs[scan[u]]);
    }
    if (base == std::numeric_limits<int32_t>::max()) break;
    const int64_t wend = static_cast<int64_t>(base) + kWindow;
    // The most looked-up non-essential terms [fd, fe) (the highest bounds; every
    // document that passes the first check is looked up in fe - 1): their postings in
    // the window are written to an array each, which a visited document reads.
    const std::size_t fd = fe - std::min(fe, kArrayTerms);
    for (std::size_t u = fd; u < fe; ++u) {
      float* da = arrays + (fe - 1 - u) * kWindow;
      int64_t j = detail::gallop(docs, ascan[u], end[u], base);
      alo[u] = j;
      for (; j < end[u] && docs[j] < wend; ++j) da[docs[j] - base] = w[j];
      ascan[u] = j;
    }
    for (std::size_t u = fe; u < nu; ++u) {
      const float c = static_cast<float>(uniq[u].count);
      int64_t j = scan[u];
      for (; j < end[u] && docs[j] < wend; ++j) {
        const int32_t r = docs[j] - base;
        mark[r >> 6] |= uint64_t{1} << (r & 63);
        wacc[r] += w[j] * c;
      }
      scan[u] = j;
    }
    // The window's documents whose essential partial score plus the other terms' maxima
    // reach the threshold, listed without a branch per document (most are dropped here).
    std::size_t nc = 0;
    {
      const double need = fe ? prefix[fe - 1] : 0.0;
      for (int32_t word = 0; word < kWindow / 64; ++word) {
        for (uint64_t bitsleft = mark[word]; bitsleft; bitsleft &= bitsleft - 1) {
          const int32_t r = word * 64 + detail::ctz64(bitsleft);
          const double partial = wacc[r];
          wacc[r] = 0.0f;
          cand_r[nc] = r;
          cand_p[nc] = partial;
          nc += (partial + need) * slack >= floor ? 1 : 0;
        }
        mark[word] = 0;
      }
    }
    // The array-held terms, highest bound first, the same way.
    for (std::size_t u = fe; u-- > fd;) {
      const float* da = arrays + (fe - 1 - u) * kWindow;
      const double c = uniq[u].count, below = u ? prefix[u - 1] : 0.0;
      std::size_t k = 0;
      for (std::size_t i = 0; i < nc; ++i) {
        const double partial = cand_p[i] + static_cast<double>(da[cand_r[i]]) * c;
        cand_r[k] = cand_r[i];
        cand_p[k] = partial;
        k += (partial + below) * slack >= floor ? 1 : 0;
      }
      nc = k;
    }
    for (std::size_t i = 0; i < nc; ++i) {
      const int32_t r = cand_r[i];
      const int32_t d = base + r;
      double partial = cand_p[i];
      bool pruned = false;
      for (std::size_t u = fd; u-- > 0;) {
        if ((partial + prefix[u]) * slack < floor) {
          pruned = true;
          break;
        }
        probe[u] = detail::gallop(docs, probe[u], end[u], d);
        if (probe[u] < end[u] && docs[probe[u]] == d) {
          contrib[u] = w[probe[u]];
          partial += static_cast<double>(contrib[u]) * uniq[u].count;
        }
      }
      // Every term is now accounted for, so partial is the score up to rounding: only
      // documents that can reach the threshold pay for the exact, query-ordered sum.
      if (!pruned && partial * slack >= floor) {
        for (std::size_t u = fd; u < fe; ++u) contrib[u] = arrays[(fe - 1 - u) * kWindow + static_cast<std::size_t>(r)];
        for (std::size_t u = fe; u < nu; ++u) {
          probe[u] = detail::gallop(docs, probe[u], end[u], d);
          if (probe[u] < end[u] && docs[probe[u]] == d) contrib[u] = w[probe[u]];
        }
        float score = 0.0f;
        for (std::size_t q = 0; q < m; ++q) {
          if (pos_to_u[q] >= 0) score += contrib[static_cast<std::size_t>(pos_to_u[q])];
        }
        offer(d, score);
      }
      std::fill(contrib.begin(), contrib.end(), 0.0f);
    }
    for (std::size_t u = fd; u < fe; ++u) {
      float* da = arrays + (fe - 1 - u) * kWindow;
      for (int64_t j = alo[u]; j < ascan[u]; ++j) da[docs[j] - base] = 0.0f;
    }
  }
  hits.assign(top.begin(), top.end());
  for (const int32_t g : tg) {
    best[g] = 0.0f;
    in_top[g] = 0;
  }
}


}  // namespace toolsift
