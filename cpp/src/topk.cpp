// Top-n per query text and candidate generation, at the cost of the query's postings.
//
// Two exact strategies:
//  * exhaustive (the default): windows of 8192 document ids; each term's postings in the
//    window are scattered (in query order) into a cache-resident accumulator, which is
//    read out through two-level marks, so the cost is the postings plus a selection on
//    raw scores that scales only the few ids that can rank;
//  * MaxScore (Turtle & Flood 1995; maxscore.cpp): document-at-a-time over the terms
//    sorted by their maximal weight; once the current n-th best score is known, terms
//    whose summed maxima cannot reach it become "non-essential" and are only probed for
//    documents the essential terms produce, and a document is dropped as soon as its
//    partial score plus the remaining maxima falls below the threshold.
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

// kAuto picks by the number of documents. Measured on synthetic Zipf catalogues of 10^6
// documents (3-16 query terms, top-100, one thread) the windowed MaxScore below was never
// faster: with BM25's per-term bounds (idf x max tfc, near idf for short documents) the
// summed bounds of the cheap terms rarely fall under the 100th best score. On the
// benchmark's synthetic tool catalogues (benchmarks/synthetic.py; real names,
// descriptions and parameters recombined; the shared sets' real queries, top-100 per
// text, one thread) it is: per call, exhaustive / MaxScore took 0.15 / 0.21 ms on fields
// of 100k documents, 0.31 / 0.42 ms at 200k, 0.387 / 0.385 ms at 300k, 0.81 / 0.77 ms at
// 600k, 1.23 / 0.86 ms at 1M and 2.87 / 1.86 ms at 2M (parameter documents, whose type
// words match most of them). Both are exact and give the same ids and scores, so kAuto
// switches to MaxScore from kAutoMaxScoreDocs documents up.
constexpr std::size_t kAutoMaxScoreDocs = 500000;
// ... and only for a text whose postings are at least 1/16 of the documents: MaxScore
// visits the id range window by window and pays per window and per essential document
// for its bounds, so with few postings there is nothing to prune that would pay for that.
// Per text at 1M tools (bench_scale's catalogue, its raw and structured queries, top-100,
// one thread; docs/results/scale-1M-2026-11-28d.md), exhaustive / MaxScore took on the
// response field 0.058 / 0.154 ms under 1/64 of the documents in postings, 0.20 / 0.41
// ms at 1/64-1/32 and 0.31 / 0.65 ms at 1/32-1/16; on the parameters field (2M
// documents) 0.86 / 0.82 ms at 1/32-1/16 and 1.46 / 1.01 ms at 1/16-1/8.
constexpr std::size_t kAutoMaxScorePostingShare = 16;
}  // namespace

void InvertedIndex::top_one(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group,
                            Prune prune, Scratch& s, std::vector<Hit>& hits) const {
  hits.clear();
  if (n == 0) return;
  bool maxscore = prune == Prune::kMaxScore;
  if (prune == Prune::kAuto && n_docs() >= kAutoMaxScoreDocs) {
    const int64_t* ip = cols_.indptr.data();
    std::size_t postings = 0;
    for (std::size_t i = 0; i < m; ++i) {
      if (terms[i] >= 0) postings += static_cast<std::size_t>(ip[terms[i] + 1] - ip[terms[i]]);
    }
    maxscore = postings * kAutoMaxScorePostingShare >= n_docs();
  }
  if (maxscore) {
    top_maxscore(terms, m, n, scale, group, s, hits);
  } else {
    top_exhaustive(terms, m, n, scale, group, s, hits);
  }
}

void InvertedIndex::top_exhaustive(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group,
                                   Scratch& s, std::vector<Hit>& hits) const {
  const detail::Scaler f(scale, upper_bound(terms, m), params_.k1);
  if (f.all_zero()) return;
  const int64_t* ip = cols_.indptr.data();
  const int32_t* docs = cols_.doc_ids.data();
  const float* w = weight_.data();
  const bool use_groups = group && grouped_;

  // Terms in query order (repeats kept), so each document receives its weights in the
  // same order as score_dense's accumulator: the sums are bit-identical. All-zero terms
  // (ATIRE idf of a term in every document) add nothing and are skipped.
  std::vector<int64_t> cur, end;
  for (std::size_t i = 0; i < m; ++i) {
    const int32_t t = terms[i];
    if (t < 0 || max_weight_[t] == 0.0f || ip[t] == ip[t + 1]) continue;
    cur.push_back(ip[t]);
    end.push_back(ip[t + 1]);
  }
  const std::size_t nt = cur.size();
  if (nt == 0) return;

  // Running selection on raw scores (a float compare per document): a min-heap of the n
  // best raw scores, and every id whose raw score reaches `floor`, a lower bound of
  // raw_floor(f(n-th best raw)) -- the raw score needed to reach the scaled bar. Ties on
  // the (coarser) scaled floats are then broken by id exactly as on a dense row.
  std::vector<float>& heap = s.heap;
  heap.clear();
  std::vector<Hit> keep;
  float floor = 0.0f;
  std::size_t compact_at = 4 * n + 64;
  const auto consider = [&](int32_t id, float v) {
    if (heap.size() < n) {
      heap.push_back(v);
      std::push_heap(heap.begin(), heap.end(), std::greater<float>());
    } else if (v > heap.front()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
      heap.back() = v;
      std::push_heap(heap.begin(), heap.end(), std::greater<float>());
    } else if (v < floor) {
      return;
    }
    keep.push_back({v, id});
    if (keep.size() >= compact_at && heap.size() == n) {
      // Raising the floor is a few expm1 calls; do it when the kept list has grown.
      const float bar = f(heap.front());
      if (bar > 0.0f) floor = std::max(floor, f.raw_floor(bar));
      keep.erase(std::remove_if(keep.begin(), keep.end(), [&](const Hit& h) { return h.score < floor; }), keep.end());
      compact_at = std::max(compact_at, 2 * keep.size());
    }
  };

  // Documents in windows of ids: every term's postings inside the window are scattered
  // into a small, cache-resident accumulator, then the window is read out in id order.
  // Postings stream; no n_docs-sized array is touched at random.
  constexpr int32_t kWindow = 8192;
  s.need_window(kWindow);
  float* wacc = s.acc.data();
  // Two-level marks: a bit per document and a bit per non-empty mark word, so reading out
  // a window whose few postings are scattered costs the postings, not kWindow.
  uint64_t mark[kWindow / 64] = {};
  uint64_t summary[kWindow / 64 / 64] = {};
  float* best = nullptr;
  const int32_t* dg = use_groups ? cols_.doc_group.data() : nullptr;
  auto& tg = s.touched_groups;
  const bool stream_groups = use_groups && groups_contiguous_;
  int32_t run_group = -1;
  float run_max = 0.0f;
  if (use_groups && !stream_groups) {
    s.need_groups(n_groups());
    best = s.best.data();
    tg.clear();
  }
  for (;;) {
    int32_t base = std::numeric_limits<int32_t>::max();
    for (std::size_t k = 0; k < nt; ++k) {
      if (cur[k] < end[k]) base = std::min(base, docs[cur[k]]);
    }
    if (base == std::numeric_limits<int32_t>::max()) break;
    const int64_t wend = static_cast<int64_t>(base) + kWindow;
    for (std::size_t k = 0; k < nt; ++k) {
      int64_t j = cur[k];
      const int64_t e = end[k];
      for (; j < e && docs[j] < wend; ++j) {
        const int32_t r = docs[j] - base;
        mark[r >> 6] |= uint64_t{1} << (r & 63);
        summary[r >> 12] |= uint64_t{1} << ((r >> 6) & 63);
        wacc[r] += w[j];
      }
      cur[k] = j;
    }
    for (int32_t sw = 0; sw < kWindow / 64 / 64; ++sw) {
      for (uint64_t words = summary[sw]; words; words &= words - 1) {
        const int32_t word = sw * 64 + detail::ctz64(words);
        for (uint64_t bitsleft = mark[word]; bitsleft; bitsleft &= bitsleft - 1) {
          const int32_t r = word * 64 + detail::ctz64(bitsleft);
          const float v = wacc[r];
          wacc[r] = 0.0f;
          if (stream_groups) {
            // Documents arrive in id order and each group's documents are contiguous, so
            // a group is complete when the next group starts.
            const int32_t g = dg[base + r];
            if (g != run_group) {
              if (run_group >= 0) consider(run_group, run_max);
              run_group = g;
              run_max = v;
            } else {
              run_max = std::max(run_max, v);
            }
          } else if (use_groups) {
            const int32_t g = dg[base + r];
            if (best[g] == 0.0f) tg.push_back(g);
            best[g] = std::max(best[g], v);
          } else {
            consider(base + r, v);
          }
        }
        mark[word] = 0;
      }
      summary[sw] = 0;
    }
  }
  if (stream_groups && run_group >= 0) consider(run_group, run_max);
  if (use_groups && !stream_groups) {
    // A group's score is only final once all its documents are seen.
    for (const int32_t g : tg) {
      consider(g, best[g]);
      best[g] = 0.0f;
    }
  }
  if (heap.size() == n) {
    const float bar = f(heap.front());
    if (bar > 0.0f) floor = std::max(floor, f.raw_floor(bar));
  }
  for (const Hit& h : keep) {
    if (h.score < floor) continue;
    const float sv = f(h.score);
    if (sv > 0.0f) hits.push_back({sv, h.id});
  }
  const auto cmp = [](const Hit& x, const Hit& y) { return detail::better(x, y); };
  if (hits.size() > n) {
    std::nth_element(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(n), hits.end(), cmp);
    hits.resize(n);
  }
  std::sort(hits.begin(), hits.end(), cmp);
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

void InvertedIndex::top_text(const int32_t* terms, std::size_t m, std::size_t n, Scale scale, bool group,
                             Prune prune, std::vector<int64_t>& ids) const {
  thread_local std::vector<Hit> hits;
  auto lease = pool_->acquire();
  lease.begin();
  top_one(terms, m, n, scale, group, prune, *lease, hits);
  lease.done();
  for (const Hit& h : hits) ids.push_back(h.id);
}

}  // namespace toolsift
