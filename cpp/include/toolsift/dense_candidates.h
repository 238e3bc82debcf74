// A need field's dense candidates for a hybrid search (DenseRetriever.candidates): each
// query row's top tools by cosine, from an exact scan of the field's non-empty rows (with
// the 4-bit prefilter where there is one) or, on a field with an IVF index, from the rows
// of the query's nprobe nearest lists (toolsift.index.ivf). One definition for the
// one-step search (hybrid_text.cpp) and the multi-step one (hybrid_steps.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "toolsift/int8_coarse.h"
#include "toolsift/int8_dot.h"

namespace toolsift {

// A field's IVF index (IvfIndex): list j holds the matrix rows list_ids[list_ptr[j]:list_ptr[j+1]].
struct IvfLists {
  Int8Rows centroids{nullptr, nullptr, 0, 0};  // the centroids' int8 codes and scales, one row a list
  const int64_t* list_ptr = nullptr;           // [centroids.n + 1]
  const int64_t* list_ids = nullptr;           // [n_listed]
  const float* list_scales = nullptr;          // [n_listed]: the listed rows' scales, in list order
  std::size_t n_listed = 0;
  std::size_t nprobe = 0;                      // lists probed per query row, 1..centroids.n
};

// How one need field's dense half finds its candidates: its top `depth` tools by cosine
// over the non-empty rows `live` (row j is catalogue row live_rows[j]) or, with `ivf`,
// over the rows of the probed lists of the whole matrix `rows`; a row per tool (groups
// null: the key is the row) or several (groups[row] is the tool).
struct DenseCandidates {
  bool adds = false;                    // false: the field adds no dense candidate
  Int8Rows live{nullptr, nullptr, 0, 0};
  const int64_t* live_rows = nullptr;   // [live.n]
  const Int8Coarse* coarse = nullptr;   // the prefilter of `live` (of the listed rows with ivf), or null
  const int64_t* groups = nullptr;      // [all rows] tool of each row, or null
  std::size_t depth = 0;                // candidates asked for: max(dense depth, k) is taken
  Int8Rows rows{nullptr, nullptr, 0, 0};  // the whole matrix (read through an IVF's list ids)
  const IvfLists* ivf = nullptr;        // the field's IVF index, or null (scan every live row)
};

// Query row i's (q [m, d], q_scales [m]) nprobe lists: the centroids with the best int8
// scores (as every int8 score: toolsift/int8_dot.h), ties to the lower list, written best
// first to out[i * p ...] with p = min(nprobe, centroids.n). The probe of IvfIndex and of
// the engine. Parallel over query rows; trusted inputs.
void ivf_probes(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& centroids, std::size_t nprobe,
                int64_t* out, int threads);

// Appends to `out`, reading by reading (row i of q [m, d]), the field's dense candidates
// of each query row: the best min(max(c.depth, k), ...) tools with a positive cosine, as
// DenseField.top_tools (no IVF) or top_tools_ivf gives them. `coarse`: the prefilter to
// use now (c.coarse or one set since). n_tools: the catalogue's tools.
void dense_candidates(const DenseCandidates& c, const Int8Coarse* coarse, const int8_t* q, const float* q_scales,
                      std::size_t m, std::size_t k, std::size_t n_tools, int threads, std::vector<int64_t>& out);

}  // namespace toolsift
