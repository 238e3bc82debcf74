// The prefiltered int8 top-n (toolsift/int8_coarse.h) against a plain int64 loop and a
// sort: the same keys in the same order (best first, ties to the lower key), on random
// rows, rows the codebook fits badly, ties everywhere, empty rows and every tail.
#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "check.h"
#include "toolsift/int8_coarse.h"
#include "toolsift/int8_dot.h"

using namespace toolsift;

namespace {

struct Data {
  std::vector<int8_t> q, codes;
  std::vector<float> q_scales, scales;
  std::vector<int64_t> keys;
  std::size_t m, n, d;
  Int8Rows rows() const { return {codes.data(), scales.data(), n, d}; }
};

// The best `keep` keys by (score desc, key asc) with a positive score.
std::vector<int64_t> expected(const Data& x, std::size_t i, std::size_t keep) {
  std::vector<std::pair<float, int64_t>> s;
  for (std::size_t j = 0; j < x.n; ++j) {
    int64_t acc = 0;
    for (std::size_t k = 0; k < x.d; ++k) acc += int64_t{x.q[i * x.d + k]} * x.codes[j * x.d + k];
    const float score = static_cast<float>(static_cast<int32_t>(acc)) * x.q_scales[i] * x.scales[j];
    if (score > 0.0f) s.emplace_back(score, x.keys[j]);
  }
  std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  std::vector<int64_t> ids;
  for (std::size_t t = 0; t < std::min(keep, s.size()); ++t) ids.push_back(s[t].second);
  return ids;
}

void check_case(const Data& x, std::size_t keep, int threads) {
  const Int8Coarse c = int8_coarse_build(x.rows());
  std::vector<int64_t> out(x.m * keep, -1), counts(x.m, -1), plain(x.m * keep, -1), plain_counts(x.m, -1);
  int8_top_coarse(x.q.data(), x.q_scales.data(), x.m, x.rows(), c, x.keys.data(), keep, out.data(), counts.data(),
                  threads);
  int8_top(x.q.data(), x.q_scales.data(), x.m, x.rows(), x.keys.data(), keep, plain.data(), plain_counts.data(),
           threads);
  for (std::size_t i = 0; i < x.m; ++i) {
    const std::vector<int64_t> want = expected(x, i, keep);
    const auto first = out.begin() + static_cast<std::ptrdiff_t>(i * keep);
    CHECK_EQ(counts[i], static_cast<int64_t>(want.size()));
    CHECK(std::equal(want.begin(), want.end(), first));
    CHECK_EQ(plain_counts[i], static_cast<int64_t>(want.size()));  // int8_top: best first too
    CHECK(std::equal(want.begin(), want.end(), plain.begin() + static_cast<std::ptrdiff_t>(i * keep)));
  }
}

enum class Kind { kRandom, kWide, kEqual, kSparse };

Data make(std::mt19937& rng, std::size_t m, std::size_t n, std::size_t d, Kind kind) {
  Data x{std::vector<int8_t>(m * d), std::vector<int8_t>(n * d), std::vector<float>(m), std::vector<float>(n),
         std::vector<int64_t>(n), m, n, d};
  std::normal_distribution<float> g(0.0f, 40.0f);
  std::uniform_int_distribution<int> any(-128, 127), pick(0, 9);
  auto code = [&] {
    if (kind == Kind::kWide) return static_cast<int8_t>(any(rng));  // flat: a bad fit for the codebook
    if (kind == Kind::kSparse && pick(rng) < 8) return int8_t{0};
    return static_cast<int8_t>(std::clamp(static_cast<int>(g(rng)), -127, 127));
  };
  for (auto& v : x.q) v = code();
  for (auto& v : x.codes) v = code();
  if (kind == Kind::kEqual) {  // every row the same: one score, ties decided by key alone
    for (std::size_t j = 1; j < n; ++j) std::copy(x.codes.begin(), x.codes.begin() + d, x.codes.begin() + j * d);
  }
  std::uniform_real_distribution<float> sc(0.001f, 0.01f);
  for (auto& v : x.q_scales) v = sc(rng);
  for (std::size_t j = 0; j < n; ++j) x.scales[j] = kind == Kind::kEqual ? 0.005f : sc(rng);
  if (n > 2) {
    std::fill(x.codes.begin() + d, x.codes.begin() + 2 * d, int8_t{0});  // a zero row
    x.scales[2] = 0.0f;                                                  // an empty document
  }
  std::vector<int64_t> perm(3 * n);
  for (std::size_t t = 0; t < perm.size(); ++t) perm[t] = static_cast<int64_t>(t);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::copy(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(n), x.keys.begin());  // distinct, unordered
  return x;
}

}  // namespace

TEST_CASE("int8_top_coarse equals a sort of the exact scores (dims, row tails, n, kinds)") {
  std::mt19937 rng(7);
  for (std::size_t d : {1, 7, 64, 100, 128, 130, 384}) {
    for (std::size_t n : {1, 2, 3, 15, 16, 17, 100, 1000}) {
      for (Kind kind : {Kind::kRandom, Kind::kWide, Kind::kEqual, Kind::kSparse}) {
        const Data x = make(rng, 3, n, d, kind);
        for (std::size_t keep : {std::size_t{1}, std::size_t{7}, std::size_t{30}, n}) {
          check_case(x, std::min(keep, n), 1);
        }
      }
    }
  }
}

TEST_CASE("int8_top_coarse: a zero query keeps nothing; a batch on threads equals one at a time") {
  std::mt19937 rng(8);
  Data x = make(rng, 9, 700, 384, Kind::kRandom);
  std::fill(x.q.begin(), x.q.begin() + 384, int8_t{0});
  check_case(x, 30, 1);
  check_case(x, 30, 2);
}

TEST_CASE("int8_coarse_build: levels ascending, every code within its bound, padding to 16 rows") {
  std::mt19937 rng(9);
  const Data x = make(rng, 1, 37, 200, Kind::kRandom);
  const Int8Coarse c = int8_coarse_build(x.rows());
  CHECK_EQ(c.dp, std::size_t{256});
  CHECK_EQ(c.resid_norm.size(), std::size_t{48});
  CHECK_EQ(c.nibbles.size(), std::size_t{48 * 128});
  CHECK(std::is_sorted(c.levels, c.levels + 16));
  for (std::size_t j = 0; j < x.n; ++j) {
    double rr = 0;
    for (std::size_t k = 0; k < x.d; ++k) {
      const uint8_t byte = c.nibbles[j * 128 + 64 * (k / 128) + (k % 128) % 64];
      const int idx = (k % 128) < 64 ? (byte & 15) : (byte >> 4);
      const double e = static_cast<double>(x.codes[j * x.d + k]) - c.levels[idx];
      rr += e * e;
    }
    CHECK(static_cast<double>(c.resid_norm[j]) * c.resid_norm[j] >= rr);
  }
  const Int8Coarse empty = int8_coarse_build({nullptr, nullptr, 0, 384});
  CHECK_EQ(empty.nibbles.size(), std::size_t{0});
}
