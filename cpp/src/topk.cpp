// Top-n per query text and candidate generation, at the cost of the query's postings.
//
// Two exact strategies:
//  * exhaustive: term-at-a-time into a pooled sparse accumulator, then selection over the
//    touched documents only;
//  * MaxScore (Turtle & Flood 1995): document-at-a-time over the terms sorted by their
//    maximal weight; once the current n-th best score is known, terms whose summed maxima
//    cannot reach it become "non-essential" and are only probed (galloping) for documents
//    the essential terms produce, and a document is dropped as soon as its partial score
//    plus the remaining maxima falls below the threshold.
// Both add a document's weights in query-term order, so scores equal score_dense's bit
// for bit and both return the same ids (ties broken by lower id on the scaled floats).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "scoring_detail.h"
#include "toolsift/inverted_index.h"
#include "toolsift/parallel.h"

namespace toolsift {
namespace {

// Exhaustive is cheaper than MaxScore's per-document bookkeeping when the postings are
// short; above this many postings per text, MaxScore's skipping wins.
constexpr int64_t kMaxScoreMinPostings = 50000;

// Relative slack on summed float bounds: a float sum of m positive weights exceeds the
// exact sum by at most about m ulps, and pruning must never drop a document that the
// exhaustive path would rank.
inline double bound_slack(std::size_t m) { return 1.0 + static_cast<double>(m + 2) * 1.2e-7; }

template <class H>
bool better(const H& x, const H& y) {
  return x.score > y.score || (x.score == y.score && x.id < y.id);
}

}  // namespace

void InvertedIndex::top_one(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group,
                            Prune prune, Scratch& s, std::vector<Hit>& hits) const {
  hits.clear();
  if (n == 0) return;
  if (prune == Prune::kAuto) {
    int64_t postings = 0;
    const int64_t* ip = cols_.indptr.data();
    for (std::size_t i = 0; i < m; ++i) {
      if (terms[i] >= 0) postings += ip[terms[i] + 1] - ip[terms[i]];
    }
    prune = postings >= kMaxScoreMinPostings ? Prune::kMaxScore : Prune::kExhaustive;
  }
  if (prune == Prune::kMaxScore) {
    top_maxscore(terms, m, n, scale, group, s, hits);
  } else {
    top_exhaustive(terms, m, n, scale, group, s, hits);
  }
}

void InvertedIndex::top_exhaustive(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group,
                                   Scratch& s, std::vector<Hit>& hits) const {
  const detail::Scaler f(scale, upper_bound(terms, m), params_.k1);
  const int64_t* ip = cols_.indptr.data();
  const int32_t* docs = cols_.doc_ids.data();
  const float* w = weight_.data();
  s.need_docs(n_docs());
  float* acc = s.acc.data();
  auto& touched = s.touched;
  touched.clear();
  for (std::size_t i = 0; i < m; ++i) {
    const int32_t t = terms[i];
    if (t < 0) continue;
    for (int64_t j = ip[t], e = ip[t + 1]; j < e; ++j) {
      const int32_t d = docs[j];
      // A zero weight (ATIRE idf of a term in every document) can list a document twice;
      // the collection below reads and clears it once, so duplicates are harmless.
      if (acc[d] == 0.0f) touched.push_back(d);
      acc[d] += w[j];
    }
  }
  if (group && grouped_) {
    s.need_groups(n_groups());
    float* best = s.best.data();
    auto& tg = s.touched_groups;
    tg.clear();
    const int32_t* dg = cols_.doc_group.data();
    for (const int32_t d : touched) {
      const float v = acc[d];
      acc[d] = 0.0f;
      if (!(v > 0.0f)) continue;
      const int32_t g = dg[d];
      if (best[g] == 0.0f) tg.push_back(g);
      best[g] = std::max(best[g], v);
    }
    for (const int32_t g : tg) {
      const float v = f(best[g]);
      best[g] = 0.0f;
      if (v > 0.0f) hits.push_back({v, g});
    }
  } else {
    for (const int32_t d : touched) {
      const float v = acc[d];
      acc[d] = 0.0f;
      if (!(v > 0.0f)) continue;
      const float sv = f(v);
      if (sv > 0.0f) hits.push_back({sv, d});
    }
  }
  const auto cmp = [](const Hit& x, const Hit& y) { return better(x, y); };
  if (hits.size() > n) {
    std::nth_element(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(n), hits.end(), cmp);
    hits.resize(n);
  }
  std::sort(hits.begin(), hits.end(), cmp);
}

void InvertedIndex::top_maxscore(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group,
                                 Scratch& s, std::vector<Hit>& hits) const {
  const detail::Scaler f(scale, upper_bound(terms, m), params_.k1);
  if (f.all_zero()) return;
  const int64_t* ip = cols_.indptr.data();
  const int32_t* docs = cols_.doc_ids.data();
  const float* w = weight_.data();
  const bool use_groups = group && grouped_;
  const int32_t* dg = use_groups ? cols_.doc_group.data() : nullptr;

  // Distinct terms with their multiplicity; query position -> distinct term index, so a
  // document's score can be summed in query order (bit-equal to the other paths).
  struct Term {
    int32_t t;
    int32_t count;
    double ub;
  };
  std::vector<Term> uniq;
  std::vector<int32_t> pos_to_u(m, -1);
  for (std::size_t i = 0; i < m; ++i) {
    const int32_t t = terms[i];
    if (t < 0 || ip[t + 1] == ip[t]) continue;
    std::size_t u = 0;
    while (u < uniq.size() && uniq[u].t != t) ++u;
    if (u == uniq.size()) uniq.push_back({t, 0, 0.0});
    ++uniq[u].count;
  }
  for (auto& u : uniq) u.ub = static_cast<double>(u.count) * max_weight_[u.t];
  std::sort(uniq.begin(), uniq.end(), [](const Term& a, const Term& b) { return a.ub < b.ub || (a.ub == b.ub && a.t < b.t); });
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t u = 0; u < uniq.size(); ++u) {
      if (uniq[u].t == terms[i]) pos_to_u[i] = static_cast<int32_t>(u);
    }
  }
  const std::size_t nu = uniq.size();
  if (nu == 0) return;
  std::vector<int64_t> cur(nu), end(nu);
  std::vector<double> prefix(nu);
  std::vector<float> contrib(nu, 0.0f);
  for (std::size_t u = 0; u < nu; ++u) {
    cur[u] = ip[uniq[u].t];
    end[u] = ip[uniq[u].t + 1];
    prefix[u] = (u ? prefix[u - 1] : 0.0) + uniq[u].ub;
  }
  const double slack = bound_slack(m);

  // The running top n as distinct ids (groups or documents) with their best scaled score.
  s.need_groups(out_width(group));
  float* best = s.best.data();
  uint8_t* in_top = s.in_top.data();
  auto& tg = s.touched_groups;
  tg.clear();
  const auto cmp = [](const Hit& x, const Hit& y) { return better(x, y); };
  std::set<Hit, decltype(cmp)> top(cmp);
  double floor = 0.0;  // raw scores below this cannot enter the top n
  std::size_t first_essential = 0;

  const auto offer = [&](int32_t d, float raw) {
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
      if (!better(Hit{v, g}, worst)) return;
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

  while (first_essential < nu) {
    int32_t d = std::numeric_limits<int32_t>::max();
    for (std::size_t u = first_essential; u < nu; ++u) {
      if (cur[u] < end[u]) d = std::min(d, docs[cur[u]]);
    }
    if (d == std::numeric_limits<int32_t>::max()) break;
    double partial = 0.0;
    for (std::size_t u = first_essential; u < nu; ++u) {
      if (cur[u] < end[u] && docs[cur[u]] == d) {
        contrib[u] = w[cur[u]];
        partial += static_cast<double>(contrib[u]) * uniq[u].count;
        ++cur[u];
      }
    }
    bool pruned = false;
    for (std::size_t u = first_essential; u-- > 0;) {
      if ((partial + prefix[u]) * slack < floor) {
        pruned = true;
        break;
      }
      cur[u] = detail::gallop(docs, cur[u], end[u], d);
      if (cur[u] < end[u] && docs[cur[u]] == d) {
        contrib[u] = w[cur[u]];
        partial += static_cast<double>(contrib[u]) * uniq[u].count;
      }
    }
    if (!pruned) {
      float score = 0.0f;
      for (std::size_t i = 0; i < m; ++i) {
        if (pos_to_u[i] >= 0) score += contrib[static_cast<std::size_t>(pos_to_u[i])];
      }
      offer(d, score);
    }
    std::fill(contrib.begin(), contrib.end(), 0.0f);
  }
  hits.assign(top.begin(), top.end());
  for (const int32_t g : tg) {
    best[g] = 0.0f;
    in_top[g] = 0;
  }
}

void InvertedIndex::topk(const QueryBatch& q, std::size_t k, Scale scale, bool group, int64_t* ids,
                         float* scores, int threads, Prune prune) const {
  parallel_chunks(q.n_queries, threads, detail::kMinQueriesPerThread, [&](int, std::size_t lo, std::size_t hi) {
    auto lease = pool_->acquire();
    lease.begin();
    std::vector<Hit> hits;
    for (std::size_t i = lo; i < hi; ++i) {
      const int64_t a = q.offsets[i], b = q.offsets[i + 1];
      top_one(q.terms + a, static_cast<std::size_t>(b - a), k, scale, group, prune, *lease, hits);
      for (std::size_t r = 0; r < k; ++r) {
        ids[i * k + r] = r < hits.size() ? hits[r].id : -1;
        scores[i * k + r] = r < hits.size() ? hits[r].score : 0.0f;
      }
    }
    lease.done();
  });
}

std::vector<int64_t> InvertedIndex::candidates(const QueryBatch& q, const TextQueries& tq, std::size_t n,
                                               Scale scale, bool group, int threads, Prune prune,
                                               std::vector<int64_t>& ids) const {
  const std::size_t nq = tq.n_queries;
  // Text range of each query (text_query is validated nondecreasing).
  std::vector<int64_t> text_ptr(nq + 1, 0);
  for (std::size_t i = 0; i < q.n_queries; ++i) ++text_ptr[static_cast<std::size_t>(tq.text_query[i]) + 1];
  for (std::size_t i = 0; i < nq; ++i) text_ptr[i + 1] += text_ptr[i];
  std::vector<std::vector<int64_t>> per_query(nq);
  parallel_chunks(nq, threads, detail::kMinQueriesPerThread, [&](int, std::size_t lo, std::size_t hi) {
    auto lease = pool_->acquire();
    lease.begin();
    std::vector<Hit> hits;
    for (std::size_t qi = lo; qi < hi; ++qi) {
      auto& out = per_query[qi];
      for (int64_t t = text_ptr[qi]; t < text_ptr[qi + 1]; ++t) {
        const int64_t a = q.offsets[t], b = q.offsets[t + 1];
        top_one(q.terms + a, static_cast<std::size_t>(b - a), n, scale, group, prune, *lease, hits);
        for (const Hit& h : hits) out.push_back(h.id);
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    lease.done();
  });
  std::vector<int64_t> ptr(nq + 1, 0);
  for (std::size_t qi = 0; qi < nq; ++qi) ptr[qi + 1] = ptr[qi] + static_cast<int64_t>(per_query[qi].size());
  ids.resize(static_cast<std::size_t>(ptr[nq]));
  for (std::size_t qi = 0; qi < nq; ++qi) std::copy(per_query[qi].begin(), per_query[qi].end(), ids.begin() + ptr[qi]);
  return ptr;
}

}  // namespace toolsift
