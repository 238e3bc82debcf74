// toolsift/group_top.h.
#include "toolsift/group_top.h"

#include <algorithm>

namespace toolsift {

std::size_t top_positive_keys(const float* scores, const int64_t* rows, std::size_t m, const int64_t* groups,
                              std::size_t n, float* best, std::vector<int64_t>& touched, int64_t* out) {
  touched.clear();
  for (std::size_t i = 0; i < m; ++i) {
    const float s = scores[i];
    if (!(s > 0.0f)) continue;
    const int64_t key = groups != nullptr ? groups[rows[i]] : rows[i];
    float& b = best[key];
    if (b == 0.0f) touched.push_back(key);
    if (s > b) b = s;
  }
  if (touched.size() > n) {
    // A strict total order (score descending, then the lower key): the kept set is unique.
    const auto better = [best](int64_t x, int64_t y) { return best[x] > best[y] || (best[x] == best[y] && x < y); };
    std::nth_element(touched.begin(), touched.begin() + static_cast<std::ptrdiff_t>(n), touched.end(), better);
  }
  for (const int64_t key : touched) best[key] = 0.0f;
  const std::size_t count = std::min(n, touched.size());
  std::copy(touched.begin(), touched.begin() + static_cast<std::ptrdiff_t>(count), out);
  std::sort(out, out + count);
  return count;
}

}  // namespace toolsift
