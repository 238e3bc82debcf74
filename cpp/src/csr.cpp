#include "toolsift/csr.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace toolsift {

void check_csr(const CsrView& c, std::size_t n_rows, const char* what) {
  const std::string w(what);
  if (c.ptr[0] != 0) throw std::invalid_argument(w + " ptr[0] must be 0, got " + std::to_string(c.ptr[0]));
  for (std::size_t r = 0; r < n_rows; ++r) {
    if (c.ptr[r + 1] < c.ptr[r]) throw std::invalid_argument(w + " ptr decreases at row " + std::to_string(r));
  }
  if (static_cast<std::size_t>(c.ptr[n_rows]) != c.n_ids) {
    throw std::invalid_argument(w + " ptr[-1]=" + std::to_string(c.ptr[n_rows]) + " but it has " +
                                std::to_string(c.n_ids) + " ids");
  }
}

std::vector<int64_t> union_rows(const std::vector<CsrView>& parts, std::size_t n_rows, std::vector<int64_t>& ids) {
  std::vector<int64_t> ptr(n_rows + 1, 0);
  ids.clear();
  std::size_t cap = 0;
  for (const auto& p : parts) cap += p.n_ids;
  ids.reserve(cap);
  for (std::size_t r = 0; r < n_rows; ++r) {
    const std::size_t start = ids.size();
    for (const auto& p : parts) ids.insert(ids.end(), p.ids + p.ptr[r], p.ids + p.ptr[r + 1]);
    std::sort(ids.begin() + static_cast<std::ptrdiff_t>(start), ids.end());
    ids.erase(std::unique(ids.begin() + static_cast<std::ptrdiff_t>(start), ids.end()), ids.end());
    ptr[r + 1] = static_cast<int64_t>(ids.size());
  }
  return ptr;
}

}  // namespace toolsift
