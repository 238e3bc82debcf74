// The best n keys of a scored row where a key scores as its best entry (a dense field's
// tools, each the max over its documents): toolsift.kernels.select.top_positive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace toolsift {

// Entry i (score scores[i]) belongs to key groups[rows[i]], or rows[i] when groups is null.
// Keys with a positive best score, the best n of them by score then lower key, written to
// out in ascending key order; returns how many. `best` is a zeroed scratch of n_keys floats,
// left zeroed. Rows and keys are trusted (checked by the caller).
std::size_t top_positive_keys(const float* scores, const int64_t* rows, std::size_t m, const int64_t* groups,
                              std::size_t n, float* best, std::vector<int64_t>& touched, int64_t* out);

}  // namespace toolsift
