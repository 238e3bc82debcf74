// Int8 dot products of query rows against int8 matrix rows: a dense field's scan (every
// row) and gather (given rows per query).
//
// score = float(q . c) * q_scale * c_scale, the dot product accumulated exactly in int32
// (|q|, |c| <= 127 and d < 131,072), then the two float32 multiplies in that order: the
// same bits on every instruction set.
#pragma once

#include <cstddef>
#include <cstdint>

namespace toolsift {

struct Int8Rows {
  const int8_t* codes;  // [n, d], row-major
  const float* scales;  // [n]
  std::size_t n;
  std::size_t d;
};

// The instruction set the dot products run on here: "avx512-vnni", "avx2" or "portable".
const char* int8_dot_isa();

// out[i * n + j]: query row i (q [m, d], q_scales [m]) against every row j of `rows`.
// Parallel over blocks of matrix rows on `threads` threads (<= 0: all CPUs); small scans
// run on the calling thread. Inputs are trusted (checked by the caller).
void int8_scan(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows, float* out,
               int threads);

// out[t] for t in [cand_ptr[i], cand_ptr[i + 1]): query row i against row cand_ids[t].
// cand_ptr has m + 1 entries; ids lie in [0, rows.n). Parallel over queries. Trusted.
void int8_gather(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                 const int64_t* cand_ptr, const int64_t* cand_ids, float* out, int threads);

// Per query row i, the best min(n, #positive) keys by score against every row j of
// `rows` (row j's key is keys[j]; keys distinct), written best first to out[i * n ...]
// with the count in counts[i]. Only positive scores count; ties go to the lower key. The
// scores are consumed as the scan makes them (no [m, n_rows] matrix). Parallel over
// queries; trusted inputs.
void int8_top(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows, const int64_t* keys,
              std::size_t n, int64_t* out, int64_t* counts, int threads);

// An IVF probe: for query row i, every row of each list it probes, in probe order:
// list c holds rows [list_ptr[c], list_ptr[c + 1]) of `lists` (stored contiguously) with
// ids list_ids[...]; query i probes lists probes[probe_ptr[i] : probe_ptr[i + 1]]. Writes
// each probed row's score and id from out_ptr[i] on (out_ptr: m + 1 entries, query i's
// share = the sizes of its lists). Parallel over queries; trusted inputs.
void int8_probe(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
                const int64_t* list_ptr, const int64_t* list_ids, const int64_t* probe_ptr, const int64_t* probes,
                const int64_t* out_ptr, float* out_scores, int64_t* out_ids, int threads);

// An IVF probe and selection in one pass: per query row i, the best min(n, #positive)
// list_ids among the rows of the lists it probes (as int8_probe), written unordered to
// out[i * n ...] with the count in counts[i]; positive scores only, ties to the lower id
// (list ids distinct). No per-row scores are written. Parallel over queries; trusted.
void int8_probe_top(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& lists,
                    const int64_t* list_ptr, const int64_t* list_ids, const int64_t* probe_ptr,
                    const int64_t* probes, std::size_t n, int64_t* out, int64_t* counts, int threads);

// The portable loops (tests compare them with the vector paths on this machine).
void int8_scan_portable(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                        float* out);
void int8_gather_portable(const int8_t* q, const float* q_scales, std::size_t m, const Int8Rows& rows,
                          const int64_t* cand_ptr, const int64_t* cand_ids, float* out);

}  // namespace toolsift
