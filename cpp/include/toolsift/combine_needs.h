// The combination over a multi-step request's readings (toolsift.search.needs): every
// need gets its share of the list. The one definition; toolsift.search.needs_reference
// keeps a NumPy twin that the tests compare with bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace toolsift {

// block: float32[n, m] row-major MFTR scores, row r = reading r's scores of the same m
// candidates (reading 0: the whole request). Writes each candidate's combined score to
// out[m] and the reading its shifted score came from to chosen[m] (may be null).
//
// Order: a candidate's place is its best rank in any reading's own ranking (score
// descending, then candidate index), then the per-need shifted score descending (each
// reading's scores moved, in float64, so that its best scores the best of any reading),
// then reading 0's score descending, then the candidate index. Score: the candidate's best
// shifted score as float32, capped one float32 step below the score placed before it, so
// the scores strictly decrease in that order (down to -inf).
void combine_needs(const float* block, std::size_t n, std::size_t m, float* out, int64_t* chosen);

// The top min(k, m) candidates by combined score (descending, then the lower index: how
// hits are ranked) with their combined scores, written to idx and score in that order;
// returns how many. The same candidates and scores as combine_needs followed by that sort,
// working out only the first k places of the order (m is less than 2^32). chosen, when
// not null, receives each of them's reading as combine_needs gives it.
std::size_t combine_needs_top(const float* block, std::size_t n, std::size_t m, std::size_t k, int64_t* idx,
                              float* score, int64_t* chosen = nullptr);

}  // namespace toolsift
