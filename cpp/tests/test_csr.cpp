// CSR checks and the row-wise union against std::set; ctz64 against its portable loop.
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "check.h"
#include "scoring_detail.h"
#include "toolsift/csr.h"

using namespace toolsift;

TEST_CASE("union_rows equals a std::set union per row") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(0, 9), id(0, 30);
  const std::size_t n_rows = 50;
  std::vector<std::vector<int64_t>> ptrs(3), idss(3);
  for (int p = 0; p < 3; ++p) {
    ptrs[p].push_back(0);
    for (std::size_t r = 0; r < n_rows; ++r) {
      const int n = len(rng);
      for (int i = 0; i < n; ++i) idss[p].push_back(id(rng));  // unsorted, with repeats
      ptrs[p].push_back(static_cast<int64_t>(idss[p].size()));
    }
  }
  std::vector<CsrView> parts;
  for (int p = 0; p < 3; ++p) {
    parts.push_back(CsrView{ptrs[p].data(), idss[p].data(), idss[p].size()});
    check_csr(parts.back(), n_rows, "part");
  }
  std::vector<int64_t> ids;
  const auto ptr = union_rows(parts, n_rows, ids);
  CHECK_EQ(ptr.size(), n_rows + 1);
  CHECK_EQ(static_cast<std::size_t>(ptr.back()), ids.size());
  for (std::size_t r = 0; r < n_rows; ++r) {
    std::set<int64_t> want;
    for (int p = 0; p < 3; ++p) want.insert(idss[p].begin() + ptrs[p][r], idss[p].begin() + ptrs[p][r + 1]);
    CHECK((std::vector<int64_t>(want.begin(), want.end()) == std::vector<int64_t>(ids.begin() + ptr[r], ids.begin() + ptr[r + 1])));
  }
  std::vector<int64_t> none;
  const auto empty_ptr = union_rows({}, 2, none);
  CHECK((empty_ptr == std::vector<int64_t>{0, 0, 0}));
  CHECK(none.empty());
}

TEST_CASE("check_csr names the CSR and the first violation") {
  const std::vector<int64_t> ids{1, 2};
  const std::vector<int64_t> start{1, 2}, down{0, 2, 1}, end{0, 1};
  CHECK_THROWS(check_csr(CsrView{start.data(), ids.data(), 2}, 1, "cands"), std::invalid_argument, "cands ptr[0]");
  CHECK_THROWS(check_csr(CsrView{down.data(), ids.data(), 2}, 2, "cands"), std::invalid_argument, "decreases at row 1");
  CHECK_THROWS(check_csr(CsrView{end.data(), ids.data(), 2}, 1, "cands"), std::invalid_argument, "ptr[-1]=1");
}

TEST_CASE("ctz64 equals the portable loop on every bit and random words") {
  for (int b = 0; b < 64; ++b) {
    const uint64_t x = uint64_t{1} << b;
    CHECK_EQ(detail::ctz64(x), b);
    CHECK_EQ(detail::ctz64_loop(x), b);
    CHECK_EQ(detail::ctz64_loop(x | (~uint64_t{0} << b)), b);
  }
  std::mt19937_64 rng(11);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t x = rng() | (uint64_t{1} << 63);
    CHECK_EQ(detail::ctz64(x), detail::ctz64_loop(x));
  }
}
