// Batch scoring of (query, tool) pairs (toolsift.batch): the MFTR score and its terms
// for given pairs, whole-catalogue tables of frequent queries, and the row pass that
// answers a batch's rows from both.
//
// Every score goes through mftr_score (fused.cpp), the one C++ definition of the MFTR
// combination, which follows the Numba kernel (toolsift.kernels.mftr) operation by
// operation; the tests compare the results with the kernel's NumPy twin. Unchecked: the
// binding (python/bind_pairs.cpp) validates every index and size before calling.
#pragma once

#include <cstddef>
#include <cstdint>

#include "toolsift/fused.h"

namespace toolsift {

// Values written per pair: the score, then (S_desc, S_param, S_resp, S_ex, penalty).
constexpr std::size_t kPairValues = 6;

// The catalogue's parameter table: tool t has parameters [param_ptr[t], param_ptr[t+1])
// with their required flags, and bits says which fields it has (mftr_score's bits).
struct ToolTable {
  const int64_t* param_ptr = nullptr;  // n_tools + 1
  const uint8_t* param_required = nullptr;
  const uint8_t* tool_bits = nullptr;  // n_tools
  std::size_t n_tools = 0;
};

// Candidates laid out as toolsift.search.candidates.Candidates: candidate i is tool
// tool[i] of query query[i]; its need rows are need_sims[need_off[i] .. + n_needs[q]]
// (three floats a row: description, response, examples) and its arg-major argument x
// parameter block starts at ap_sims[ap_off[i]].
struct PackedPairs {
  const int64_t* query = nullptr;
  const int64_t* tool = nullptr;
  const int64_t* need_off = nullptr;
  const int64_t* ap_off = nullptr;
  const int64_t* n_needs = nullptr;  // per query
  const int64_t* n_args = nullptr;   // per query
  const uint8_t* penalize = nullptr;  // per query
  const float* need_sims = nullptr;
  const float* ap_sims = nullptr;
  std::size_t n = 0;
};

// out[i * 6 .. + 6] = the score and terms of candidate i, in parallel over candidates.
void score_packed_pairs(const PackedPairs& c, const ToolTable& t, const MftrParams& p, int threads, float* out);

// Field scores of every tool for a set of queries, text-major: need text r (query q's
// are [need_ptr[q], need_ptr[q+1])) has one row of n_tools floats per need field; argument
// text a (query q's: [arg_ptr[q], arg_ptr[q+1])) one row over every parameter document
// (param_ptr[0] .. param_ptr[n_tools]).
struct WholeCatalogue {
  const float* need[3] = {nullptr, nullptr, nullptr};  // description, response, examples
  const int64_t* need_ptr = nullptr;                   // n_queries + 1
  const float* params = nullptr;
  const int64_t* arg_ptr = nullptr;  // n_queries + 1
  const uint8_t* penalize = nullptr;  // n_queries
  std::size_t n_queries = 0;
};

// tables[(rows[q] * n_tools + t) * 6 .. + 6] = the score and terms of query q with tool
// t, for every tool: the candidates' packing and the kernel in one pass, parallel over
// queries (rows must be distinct).
void score_whole_catalogue(const WholeCatalogue& w, const ToolTable& t, const MftrParams& p, const int64_t* rows,
                           int threads, float* tables);

// The row pass of a batch: row i's six values (out[c * n + i], column-major) from
// tables[table_of[qkey[i]], tool_of[tkey[i]]] when both are >= 0, else from
// grouped[inverse[i]] (inverse may be null), else NaN.
struct RowKeys {
  const int32_t* qkey = nullptr;
  const int32_t* tkey = nullptr;
  const int64_t* table_of = nullptr;
  const int64_t* tool_of = nullptr;
  const int64_t* inverse = nullptr;  // null: no grouped rows
  std::size_t n = 0;
};
void fill_pair_rows(const RowKeys& k, const float* tables, std::size_t n_tools, const float* grouped, int threads,
                    float* out);

// Distinct (query, tool) pairs of a batch as CSR by query (each query's tools strictly
// increasing) and each row's entry (-1 for a row with query < 0): two linear passes, a
// counting sort by query and a per-query tool marker. ptr: n_queries + 1; tools and
// inverse: n rows. Returns the number of distinct pairs.
std::size_t group_pairs(const int64_t* query, const int64_t* tool, std::size_t n, std::size_t n_queries,
                        std::size_t n_tools, int64_t* ptr, int64_t* tools, int64_t* inverse);

}  // namespace toolsift
