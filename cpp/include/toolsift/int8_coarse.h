// An exact prefilter for int8 top-n scans: a compact copy of an int8 matrix that bounds
// every row's score from above, so that a top-n scan reads the int8 rows of only the few
// that can still make the list.
//
// Each code is replaced by the nearest of 16 int8 levels (one codebook per matrix, fitted
// to its codes), stored as a 4-bit index: half the bytes of the matrix. For a query q and
// row c with coarse row c' (the levels), q.c = q.c' + q.(c - c') and, by Cauchy-Schwarz,
// q.(c - c') <= |q| |c - c'|; the build stores |c - c'| per row (rounded up). The scan
// computes q.c' exactly on the coarse rows, adds the bound (rounded up), and turns it into
// a score as an exact score is made (float(acc) * q_scale * scale: monotone in acc, the
// scales being >= 0), so a row's bound is never below its exact score. A row whose bound
// is below the n-th best exact score so far cannot enter the top n and is never read.
// Measured on the MiniLM description vectors of 6,417 tools: ~5% of rows are rescored
// (docs/results/dense-scan-2026-11-28.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "toolsift/int8_dot.h"

namespace toolsift {

struct Int8Coarse {
  std::size_t n = 0;       // rows
  std::size_t d = 0;       // dim of the int8 rows
  std::size_t dp = 0;      // d padded to a multiple of 128 (64 bytes of 4-bit codes)
  int8_t levels[16] = {};  // the codebook, ascending
  // [rows padded to 16, dp / 2]: byte j of a row's 64-byte chunk b holds dim 128 b + j in
  // its low nibble and dim 128 b + 64 + j in its high nibble (padding dims: index 0).
  std::vector<uint8_t> nibbles;
  std::vector<float> resid_norm;  // [rows padded to 16]: >= |c - c'| (0 on padding rows)
};

// Dims above this are not prefiltered (int8_top_coarse then scans every row): keeps the
// coarse sums and bounds inside int32.
constexpr std::size_t kCoarseMaxDim = 8192;

// Builds the prefilter of `rows` (codes only; the scales are read at scan time).
Int8Coarse int8_coarse_build(const Int8Rows& rows);

// Builds the prefilter of `matrix`'s rows take[0:n_rows) in that order (take null: rows
// 0..n_rows-1): the prefilter of that gathered matrix, without making it. The caller
// checks take's ids.
Int8Coarse int8_coarse_build_rows(const Int8Rows& matrix, const int64_t* take, std::size_t n_rows);

// Whether this CPU runs the prefiltered scan (AVX-512 VBMI and VNNI); elsewhere
// int8_top_coarse is int8_top.
bool int8_coarse_supported();

// int8_top (same arguments, same result: the best min(n, #positive) keys per query, best
// first, ties to the lower key), reading the int8 rows only where `coarse` (built from
// rows' codes; scales >= 0) cannot rule them out. Parallel over queries; trusted inputs.
void int8_top_coarse(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                     const Int8Coarse& coarse, const int64_t* keys, std::size_t n, int64_t* out, int64_t* counts,
                     int threads);

// int8_probe_top (an IVF probe and its top-n; same arguments and the same kept set, but
// best first) with `coarse` built from the list matrix `lists`: in each probed list only
// the rows the prefilter cannot rule out are read in int8. The probed lists must be
// distinct (as int8_probe_top, a list probed twice offers its rows twice).
void int8_probe_top_coarse(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
                           const Int8Coarse& coarse, const int64_t* list_ptr, const int64_t* list_ids,
                           const int64_t* probe_ptr, const int64_t* probes, std::size_t n, int64_t* out,
                           int64_t* counts, int threads);

// int8_probe_top_coarse for IVF lists that hold no copy of their rows: list j's rows are
// matrix rows list_ids[list_ptr[j]:list_ptr[j+1]], list_scales their scales in list order
// (= matrix.scales[list_ids]), `coarse` built by int8_coarse_build_rows(matrix, list_ids,
// n_listed). The int8 rows the prefilter cannot rule out are read from `matrix`; the ids
// are matrix rows (= list_ids entries), best first, the same kept set as int8_probe_top
// over a list-order copy. Without the prefilter's instructions every probed row is read
// from `matrix`. Trusted inputs (list_ids inside matrix), parallel over queries.
void int8_probe_top_rows(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& matrix,
                         const float* list_scales, const Int8Coarse& coarse, const int64_t* list_ptr,
                         const int64_t* list_ids, std::size_t n_listed, const int64_t* probe_ptr,
                         const int64_t* probes, std::size_t n, int64_t* out, int64_t* counts, int threads);

}  // namespace toolsift
