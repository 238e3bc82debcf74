// Row-wise operations on CSR id lists (row r holds ids[ptr[r] : ptr[r+1]]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace toolsift {

struct CsrView {
  const int64_t* ptr = nullptr;  // n_rows + 1
  const int64_t* ids = nullptr;
  std::size_t n_ids = 0;
};

// Throws std::invalid_argument (naming `what`) unless ptr starts at 0, never decreases
// and ends at n_ids.
void check_csr(const CsrView& c, std::size_t n_rows, const char* what);

// Row by row, the sorted set union of the ids of all `parts`. Returns the row pointer
// (n_rows + 1) and fills `ids`.
std::vector<int64_t> union_rows(const std::vector<CsrView>& parts, std::size_t n_rows, std::vector<int64_t>& ids);

}  // namespace toolsift
