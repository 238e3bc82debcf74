// Batch scoring of (query, tool) pairs (toolsift/pair_scores.h). The arithmetic is
// mftr_score's (fused.cpp); this file only lays the inputs out for it and writes results.
#include "toolsift/pair_scores.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "toolsift/parallel.h"

namespace toolsift {

namespace {

// Below these amounts a thread costs more than it saves.
constexpr std::size_t kMinPairsPerThread = 16384;
constexpr std::size_t kMinTablesPerThread = 2;
constexpr std::size_t kMinRowsPerThread = 131072;

}  // namespace

void score_packed_pairs(const PackedPairs& c, const ToolTable& t, const MftrParams& p, int threads, float* out) {
  parallel_chunks(c.n, threads, kMinPairsPerThread, [&](int, std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      const int64_t q = c.query[i];
      const int64_t tool = c.tool[i];
      const int64_t p0 = t.param_ptr[tool];
      const float* row = c.need_sims + 3 * c.need_off[i];
      float* o = out + kPairValues * i;
      o[0] = mftr_score(row, row + 1, row + 2, 3, c.n_needs[q], c.ap_sims + c.ap_off[i], c.n_args[q],
                        t.param_required + p0, t.param_ptr[tool + 1] - p0, t.tool_bits[tool], c.penalize[q] != 0, p,
                        o + 1);
    }
  });
}

void score_whole_catalogue(const WholeCatalogue& w, const ToolTable& t, const MftrParams& p, const int64_t* rows,
                           int threads, float* tables) {
  const std::size_t nt = t.n_tools;
  const int64_t* pp = t.param_ptr;
  const int64_t width = pp[nt] - pp[0];  // one argument text's row: every parameter document
  parallel_chunks(w.n_queries, threads, kMinTablesPerThread, [&](int, std::size_t lo, std::size_t hi) {
    std::vector<float> ap;  // one tool's arg-major block, as the kernel's packing lays it out
    for (std::size_t q = lo; q < hi; ++q) {
      const int64_t n0 = w.need_ptr[q], nn = w.need_ptr[q + 1] - n0;
      const int64_t a0 = w.arg_ptr[q], na = w.arg_ptr[q + 1] - a0;
      const bool penalize = w.penalize[q] != 0;
      const std::size_t base = nn > 0 ? static_cast<std::size_t>(n0) * nt : 0;
      const float* desc = w.need[0] + base;
      const float* resp = w.need[1] + base;
      const float* ex = w.need[2] + base;
      float* table = tables + static_cast<std::size_t>(rows[q]) * nt * kPairValues;
      for (std::size_t tool = 0; tool < nt; ++tool) {
        const int64_t first = pp[tool], n_par = pp[tool + 1] - first;
        const float* block = nullptr;
        if (na > 0 && n_par > 0) {
          ap.resize(static_cast<std::size_t>(na * n_par));
          for (int64_t a = 0; a < na; ++a) {
            const float* src = w.params + (a0 + a) * width + (first - pp[0]);
            std::copy(src, src + n_par, ap.data() + a * n_par);
          }
          block = ap.data();
        }
        float* o = table + tool * kPairValues;
        o[0] = mftr_score(desc + tool, resp + tool, ex + tool, static_cast<int64_t>(nt), nn, block, na,
                          t.param_required + first, n_par, t.tool_bits[tool], penalize, p, o + 1);
      }
    }
  });
}

void fill_pair_rows(const RowKeys& k, const float* tables, std::size_t n_tools, const float* grouped, int threads,
                    float* out) {
  const std::size_t n = k.n;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Row i's source: its table entry, its grouped entry, or none.
  const auto source = [&](std::size_t i) -> const float* {
    const int64_t r = k.table_of[k.qkey[i]];
    const int64_t t = k.tool_of[k.tkey[i]];
    if (r >= 0 && t >= 0) {
      return tables + (static_cast<std::size_t>(r) * n_tools + static_cast<std::size_t>(t)) * kPairValues;
    }
    if (k.inverse != nullptr && k.inverse[i] >= 0) return grouped + static_cast<std::size_t>(k.inverse[i]) * kPairValues;
    return nullptr;
  };
  parallel_chunks(n, threads, kMinRowsPerThread, [&](int, std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
#if defined(__GNUC__) || defined(__clang__)
      // The entries are scattered over the tables (tens of MB): ask for row i + D's
      // while copying row i's, so the cache misses overlap instead of queueing.
      constexpr std::size_t kAhead = 16;
      if (i + kAhead < hi) {
        const float* next = source(i + kAhead);
        if (next != nullptr) {
          __builtin_prefetch(next);
          __builtin_prefetch(next + kPairValues - 1);
        }
      }
#endif
      const float* src = source(i);
      for (std::size_t c = 0; c < kPairValues; ++c) out[c * n + i] = src != nullptr ? src[c] : nan;
    }
  });
}

std::size_t group_pairs(const int64_t* query, const int64_t* tool, std::size_t n, std::size_t n_queries,
                        std::size_t n_tools, int64_t* ptr, int64_t* tools, int64_t* inverse) {
  // Counting sort of the scored rows by query.
  std::vector<int64_t> start(n_queries + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (query[i] >= 0) ++start[static_cast<std::size_t>(query[i]) + 1];
  }
  for (std::size_t q = 0; q < n_queries; ++q) start[q + 1] += start[q];
  std::vector<int64_t> order(static_cast<std::size_t>(start[n_queries]));
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t q = query[i];
    if (q >= 0) {
      order[static_cast<std::size_t>(fill[static_cast<std::size_t>(q)]++)] = static_cast<int64_t>(i);
    } else {
      inverse[i] = -1;
    }
  }
  // Per query: its distinct tools, ascending, and each row's entry. slot maps a tool to
  // its entry for the current query and is reset after it, so the work is linear in the
  // rows plus, for a query that names many tools, the catalogue.
  std::vector<int64_t> slot(n_tools, -1);
  std::size_t m = 0;
  ptr[0] = 0;
  for (std::size_t q = 0; q < n_queries; ++q) {
    const auto lo = static_cast<std::size_t>(start[q]), hi = static_cast<std::size_t>(start[q + 1]);
    const std::size_t first = m;
    for (std::size_t j = lo; j < hi; ++j) {
      const int64_t t = tool[order[j]];
      if (slot[static_cast<std::size_t>(t)] < 0) {
        slot[static_cast<std::size_t>(t)] = 0;
        tools[m++] = t;
      }
    }
    const std::size_t k = m - first;
    if (k * 16 > n_tools) {
      // Many tools: read them back off the marker array in order (no sort).
      std::size_t w = first;
      for (std::size_t t = 0; t < n_tools; ++t) {
        if (slot[t] >= 0) {
          tools[w] = static_cast<int64_t>(t);
          slot[t] = static_cast<int64_t>(w++);
        }
      }
    } else {
      std::sort(tools + first, tools + m);
      for (std::size_t w = first; w < m; ++w) slot[static_cast<std::size_t>(tools[w])] = static_cast<int64_t>(w);
    }
    for (std::size_t j = lo; j < hi; ++j) inverse[order[j]] = slot[static_cast<std::size_t>(tool[order[j]])];
    for (std::size_t w = first; w < m; ++w) slot[static_cast<std::size_t>(tools[w])] = -1;
    ptr[q + 1] = static_cast<int64_t>(m);
  }
  return m;
}

}  // namespace toolsift
