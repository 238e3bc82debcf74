// Top-n per query text and candidate generation, at the cost of the query's postings.
//
// Two exact strategies:
//  * exhaustive (the default): term-at-a-time into a pooled sparse accumulator, then a
//    selection over the touched documents only, on raw scores, scaling only the few that
//    can rank;
//  * MaxScore (Turtle & Flood 1995): document-at-a-time over the terms sorted by their
//    maximal weight; once the current n-th best score is known, terms whose summed maxima
//    cannot reach it become "non-essential" and are only probed (galloping) for documents
//    the essential terms produce, and a document is dropped as soon as its partial score
//    plus the remaining maxima falls below the threshold.
// Both add a document's weights in query-term order, so scores equal score_dense's bit
// for bit and both return the same ids (ties broken by lower id on the scaled floats).
#include <algorithm>
#include <cstdint>
#include <functional>
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

// kAuto runs the exhaustive sparse path. Measured on synthetic Zipf catalogues of 10^6
// documents (3-16 query terms, top-100, one thread) the windowed MaxScore below was never
// faster: with BM25's per-term bounds (idf x max tfc, near idf for short documents) the
// summed bounds of the cheap terms rarely fall under the 100th best score, so few
// documents are skipped while each survivor pays for probing. It stays available
// (Prune::kMaxScore) and exact; block-max bounds would be the next step.
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
  std::size_t postings = 0;
  for (std::size_t i = 0; i < m; ++i) {
    if (terms[i] >= 0) postings += static_cast<std::size_t>(ip[terms[i] + 1] - ip[terms[i]]);
  }
  if (touched.size() < postings) touched.resize(postings);
  int32_t* tl = touched.data();
  std::size_t nt = 0;
  for (std::size_t i = 0; i < m; ++i) {
    const int32_t t = terms[i];
    // Skipping all-zero terms (ATIRE idf of a term in every document) keeps every add
    // positive, so acc[d] == 0 is an exact first-touch test and the list has no repeats.
    if (t < 0 || max_weight_[t] == 0.0f) continue;
    for (int64_t j = ip[t], e = ip[t + 1]; j < e; ++j) {
      const int32_t d = docs[j];
      // Branch-free append: whether a document is new is unpredictable after the first term.
      tl[nt] = d;
      nt += acc[d] == 0.0f ? 1 : 0;
      acc[d] += w[j];
    }
  }
  const int32_t* ids = tl;
  std::size_t n_ids = nt;
  float* val = acc;
  if (group && grouped_) {
    s.need_groups(n_groups());
    float* best = s.best.data();
    auto& tg = s.touched_groups;
    tg.clear();
    const int32_t* dg = cols_.doc_group.data();
    for (std::size_t k = 0; k < nt; ++k) {
      const int32_t d = tl[k];
      const float v = acc[d];
      acc[d] = 0.0f;
      const int32_t g = dg[d];
      if (best[g] == 0.0f) tg.push_back(g);
      best[g] = std::max(best[g], v);
    }
    ids = tg.data();
    n_ids = tg.size();
    val = best;
  }
  // Select on raw scores (a cheap float compare per id) and scale only the few that can
  // rank: the n-th best raw score r gives the scaled bar f(r), and every id whose scaled
  // score reaches that bar has a raw score >= raw_floor(f(r)). Ties on the (coarser)
  // scaled floats are then broken by id exactly as on a dense row.
  float floor = 0.0f;
  if (n_ids > n) {
    std::vector<float>& heap = s.heap;
    heap.clear();
    for (std::size_t k = 0; k < n_ids; ++k) {
      const float v = val[ids[k]];
      if (heap.size() < n) {
        heap.push_back(v);
        std::push_heap(heap.begin(), heap.end(), std::greater<float>());
      } else if (v > heap.front()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
        heap.back() = v;
        std::push_heap(heap.begin(), heap.end(), std::greater<float>());
      }
    }
    const float bar = f(heap.front());
    if (bar > 0.0f) floor = std::max(floor, f.raw_floor(bar));
  }
  for (std::size_t k = 0; k < n_ids; ++k) {
    const int32_t id = ids[k];
    const float v = val[id];
    val[id] = 0.0f;
    if (v < floor) continue;
    const float sv = f(v);
    if (sv > 0.0f) hits.push_back({sv, id});
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
  const auto cmp = [](const Hit& x, const Hit& y) { return better(x, y); };
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

  // Windows of documents: the essential terms' postings are scattered into a small
  // accumulator (cache resident), then the window's documents are visited in order and
  // only those whose bound reaches the threshold are probed in the other terms.
  constexpr int32_t kWindow = 4096;
  std::vector<float> wacc(kWindow, 0.0f);
  uint64_t mark[kWindow / 64] = {};
  while (first_essential < nu) {
    const std::size_t fe = first_essential;  // fixed for the window: wacc holds terms [fe, nu)
    int32_t base = std::numeric_limits<int32_t>::max();
    for (std::size_t u = fe; u < nu; ++u) {
      if (scan[u] < end[u]) base = std::min(base, docs[scan[u]]);
    }
    if (base == std::numeric_limits<int32_t>::max()) break;
    const int64_t wend = static_cast<int64_t>(base) + kWindow;
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
    for (int32_t word = 0; word < kWindow / 64; ++word) {
      for (uint64_t bitsleft = mark[word]; bitsleft; bitsleft &= bitsleft - 1) {
        const int32_t r = word * 64 + __builtin_ctzll(bitsleft);
        const int32_t d = base + r;
        double partial = wacc[r];
        wacc[r] = 0.0f;
        if ((partial + (fe ? prefix[fe - 1] : 0.0)) * slack < floor) continue;
        bool pruned = false;
        for (std::size_t u = fe; u-- > 0;) {
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
        if (!pruned && partial * slack < floor) pruned = true;
        if (!pruned) {
          for (std::size_t u = fe; u < nu; ++u) {
            probe[u] = detail::gallop(docs, probe[u], end[u], d);
            if (probe[u] < end[u] && docs[probe[u]] == d) contrib[u] = w[probe[u]];
          }
          float score = 0.0f;
          for (std::size_t i = 0; i < m; ++i) {
            if (pos_to_u[i] >= 0) score += contrib[static_cast<std::size_t>(pos_to_u[i])];
          }
          offer(d, score);
        }
        std::fill(contrib.begin(), contrib.end(), 0.0f);
      }
      mark[word] = 0;
    }
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
