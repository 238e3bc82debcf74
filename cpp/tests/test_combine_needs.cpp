// The combination over readings (toolsift/combine_needs.h): its top k equals the whole
// combination ranked (score descending, then the lower index), its scores strictly decrease
// along that ranking down to -inf and never exceed a candidate's best shifted score, and one
// reading of distinct scores keeps them. (tests/test_needs_engine.py compares both with the
// NumPy twin bit for bit; this runs them under the sanitizers.)
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "check.h"
#include "toolsift/combine_needs.h"

using namespace toolsift;

namespace {

std::vector<float> block_of(std::mt19937& rng, std::size_t n, std::size_t m, int levels) {
  std::vector<float> b(n * m);
  std::uniform_int_distribution<int> pick(0, levels - 1);
  std::normal_distribution<float> g(0.0f, 0.3f);
  for (auto& v : b) v = levels > 0 ? static_cast<float>(pick(rng)) / static_cast<float>(levels) : g(rng);
  return b;
}

}  // namespace

TEST_CASE("combine_needs_top equals the whole combination ranked; scores decrease strictly") {
  std::mt19937 rng(11);
  for (std::size_t n : {1, 2, 5, 9}) {
    for (std::size_t m : {1, 2, 7, 40, 300}) {
      for (int levels : {0, 2, 5}) {
        const std::vector<float> b = block_of(rng, n, m, levels);
        std::vector<float> all(m);
        std::vector<int64_t> chosen(m);
        combine_needs(b.data(), n, m, all.data(), chosen.data());
        std::vector<uint32_t> by(m);
        for (std::size_t i = 0; i < m; ++i) by[i] = static_cast<uint32_t>(i);
        std::sort(by.begin(), by.end(),
                  [&](uint32_t x, uint32_t y) { return all[x] > all[y] || (all[x] == all[y] && x < y); });
        for (std::size_t p = 1; p < m; ++p) {
          CHECK(all[by[p]] < all[by[p - 1]] || all[by[p]] == -std::numeric_limits<float>::infinity());
        }
        for (std::size_t i = 0; i < m; ++i) {
          CHECK(chosen[i] >= 0 && static_cast<std::size_t>(chosen[i]) < n);
        }
        for (std::size_t k : {std::size_t{1}, std::size_t{3}, std::size_t{10}, m, m + 3}) {
          std::vector<int64_t> idx(std::min(k, m));
          std::vector<float> score(idx.size());
          const std::size_t got = combine_needs_top(b.data(), n, m, k, idx.data(), score.data());
          CHECK_EQ(got, std::min(k, m));
          for (std::size_t p = 0; p < got; ++p) {
            CHECK_EQ(idx[p], static_cast<int64_t>(by[p]));
            CHECK(score[p] == all[by[p]]);
          }
        }
        if (n == 1 && levels == 0) {  // one reading of distinct scores: its own scores
          for (std::size_t i = 0; i < m; ++i) CHECK(all[i] == b[i]);
        }
      }
    }
  }
}

TEST_CASE("combine_needs_top: the cap down to -inf keeps the ranking's ties by index") {
  const float low = std::numeric_limits<float>::lowest(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> b = {low, low, low, low, -inf, low, -inf, low, low, low};
  std::vector<float> all(5);
  combine_needs(b.data(), 2, 5, all.data(), nullptr);
  std::vector<int64_t> idx(3);
  std::vector<float> score(3);
  CHECK_EQ(combine_needs_top(b.data(), 2, 5, 3, idx.data(), score.data()), std::size_t{3});
  CHECK(score[0] == low);
  CHECK(score[1] == -inf && score[2] == -inf);
  CHECK(idx[1] < idx[2]);
  CHECK_EQ(combine_needs_top(b.data(), 2, 5, 0, idx.data(), score.data()), std::size_t{0});
}
