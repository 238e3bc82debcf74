// A need field's dense candidates (toolsift/dense_candidates.h).
#include "toolsift/dense_candidates.h"

#include <algorithm>
#include <numeric>

#include "toolsift/group_top.h"
#include "toolsift/parallel.h"

namespace toolsift {

void ivf_probes(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& centroids, std::size_t nprobe,
                int64_t* out, int threads) {
  const std::size_t k = centroids.n, p = std::min(nprobe, k);
  if (p == 0) return;
  parallel_chunks(m, threads, 1, [&](int, std::size_t i0, std::size_t i1) {
    std::vector<float> s(k);
    std::vector<int64_t> order(k);
    for (std::size_t i = i0; i < i1; ++i) {
      int8_scan(q + i * centroids.d, q_scales + i, 1, centroids, s.data(), 1);
      std::iota(order.begin(), order.end(), int64_t{0});
      const auto better = [&](int64_t a, int64_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); };
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(p), order.end(), better);
      std::copy_n(order.begin(), p, out + i * p);
    }
  });
}

namespace {

// The rows of query row i's probed lists, in probe order, as IvfIndex.probe lists them.
void probed_rows(const IvfLists& ivf, const int64_t* probes, std::vector<int64_t>& rows) {
  rows.clear();
  for (std::size_t j = 0; j < ivf.nprobe; ++j) {
    const int64_t l = probes[j];
    rows.insert(rows.end(), ivf.list_ids + ivf.list_ptr[l], ivf.list_ids + ivf.list_ptr[l + 1]);
  }
}

// Appends row i's counts[i] ids of ids[i * n ...] for each of the m rows, in row order.
void append_tops(const std::vector<int64_t>& ids, const std::vector<int64_t>& counts, std::size_t m, std::size_t n,
                 std::vector<int64_t>& out) {
  for (std::size_t i = 0; i < m; ++i) {
    const auto first = ids.begin() + static_cast<std::ptrdiff_t>(i * n);
    out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(counts[i]));
  }
}

}  // namespace

void dense_candidates(const DenseCandidates& c, const Int8Coarse* coarse, const int8_t* q, const float* q_scales,
                      std::size_t m, std::size_t k, std::size_t n_tools, int threads, std::vector<int64_t>& out) {
  thread_local std::vector<int64_t> top_ids, top_counts, probes, probe_ptr, rows, touched;
  thread_local std::vector<float> scores, best;
  const std::size_t depth = std::max(c.depth, k);
  const std::size_t d = c.ivf != nullptr ? c.rows.d : c.live.d;
  if (c.ivf != nullptr) {
    const IvfLists& ivf = *c.ivf;
    const std::size_t p = ivf.nprobe;
    probes.resize(m * p);
    ivf_probes(q, q_scales, m, ivf.centroids, p, probes.data(), 1);
    if (c.groups == nullptr) {  // a row per tool (IvfIndex.probe_top): the listed rows' best n
      const std::size_t n = std::min(depth, std::max<std::size_t>(ivf.n_listed, 1));
      probe_ptr.resize(m + 1);
      for (std::size_t i = 0; i <= m; ++i) probe_ptr[i] = static_cast<int64_t>(i * p);
      top_ids.resize(m * n);
      top_counts.assign(m, 0);
      static const Int8Coarse kNone{};  // no prefilter yet: every probed row is read
      int8_probe_top_rows(q, q_scales, m, c.rows, ivf.list_scales, coarse != nullptr ? *coarse : kNone, ivf.list_ptr,
                          ivf.list_ids, ivf.n_listed, probe_ptr.data(), probes.data(), n, top_ids.data(),
                          top_counts.data(), threads);
      append_tops(top_ids, top_counts, m, n, out);
      return;
    }
    // Rows grouped by tool (IvfIndex.probe, then top_positive over the probed rows).
    const std::size_t n = std::min(depth, n_tools);
    if (n == 0) return;
    if (best.size() != n_tools) best.assign(n_tools, 0.0f);  // top_positive_keys leaves it zeroed
    top_ids.resize(n);
    for (std::size_t i = 0; i < m; ++i) {
      probed_rows(ivf, probes.data() + i * p, rows);
      scores.resize(rows.size());
      const int64_t ptr[2] = {0, static_cast<int64_t>(rows.size())};
      int8_gather(q + i * d, q_scales + i, 1, c.rows, ptr, rows.data(), scores.data(), threads);
      const std::size_t got =
          top_positive_keys(scores.data(), rows.data(), rows.size(), c.groups, n, best.data(), touched, top_ids.data());
      out.insert(out.end(), top_ids.begin(), top_ids.begin() + static_cast<std::ptrdiff_t>(got));
    }
    return;
  }
  if (c.live.n == 0) return;
  if (c.groups == nullptr) {  // a row per tool: int8_top over the live rows, keys = rows
    const std::size_t n = std::min(depth, c.live.n);
    top_ids.resize(m * n);
    top_counts.assign(m, 0);
    if (coarse != nullptr) {
      int8_top_coarse(q, q_scales, m, c.live, *coarse, c.live_rows, n, top_ids.data(), top_counts.data(), threads);
    } else {
      int8_top(q, q_scales, m, c.live, c.live_rows, n, top_ids.data(), top_counts.data(), threads);
    }
    append_tops(top_ids, top_counts, m, n, out);
    return;
  }
  // Rows grouped by tool: a tool scores as its best row.
  const std::size_t n = std::min(depth, n_tools);
  if (n == 0) return;
  scores.resize(m * c.live.n);
  int8_scan(q, q_scales, m, c.live, scores.data(), threads);
  if (best.size() != n_tools) best.assign(n_tools, 0.0f);
  top_ids.resize(n);
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t got = top_positive_keys(scores.data() + i * c.live.n, c.live_rows, c.live.n, c.groups, n,
                                              best.data(), touched, top_ids.data());
    out.insert(out.end(), top_ids.begin(), top_ids.begin() + static_cast<std::ptrdiff_t>(got));
  }
}

}  // namespace toolsift
