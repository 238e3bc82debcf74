// The int8 scan on this CPU's vector path against a plain int64 loop, bit for bit.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "toolsift/int8_dot.h"

using namespace toolsift;

namespace {

struct Case {
  std::vector<int8_t> q, codes;
  std::vector<float> q_scales, scales;
  std::size_t m, n, d;
};

Case random_case(std::mt19937& rng, std::size_t m, std::size_t n, std::size_t d, bool extreme) {
  std::uniform_int_distribution<int> code(-127, 127), sign(0, 1);
  std::uniform_real_distribution<float> scale(0.0f, 0.02f);
  Case c{std::vector<int8_t>(m * d), std::vector<int8_t>(n * d), std::vector<float>(m), std::vector<float>(n), m, n, d};
  // Extreme: every code +-127, the largest sums the int32 accumulator must hold exactly.
  auto draw = [&] { return static_cast<int8_t>(extreme ? (sign(rng) ? 127 : -127) : code(rng)); };
  for (auto& v : c.q) v = draw();
  for (auto& v : c.codes) v = draw();
  for (auto& v : c.q_scales) v = scale(rng);
  for (auto& v : c.scales) v = scale(rng);
  if (n > 0) c.scales[0] = 0.0f;  // an empty document
  return c;
}

std::vector<float> naive(const Case& c) {
  std::vector<float> out(c.m * c.n);
  for (std::size_t i = 0; i < c.m; ++i) {
    for (std::size_t j = 0; j < c.n; ++j) {
      int64_t acc = 0;
      for (std::size_t k = 0; k < c.d; ++k) acc += int64_t{c.q[i * c.d + k]} * int64_t{c.codes[j * c.d + k]};
      out[i * c.n + j] = static_cast<float>(static_cast<int32_t>(acc)) * c.q_scales[i] * c.scales[j];
    }
  }
  return out;
}

// The best `keep` ids of (score, id) pairs with a positive score, ties to the lower id,
// sorted by id: what int8_top and int8_probe_top must return (in any order).
std::vector<int64_t> best_ids(std::vector<std::pair<float, int64_t>> cand, std::size_t keep) {
  cand.erase(std::remove_if(cand.begin(), cand.end(), [](const auto& x) { return !(x.first > 0.0f); }), cand.end());
  std::sort(cand.begin(), cand.end(), [](const auto& x, const auto& y) {
    return x.first > y.first || (x.first == y.first && x.second < y.second);
  });
  std::vector<int64_t> ids;
  for (std::size_t k = 0; k < std::min(keep, cand.size()); ++k) ids.push_back(cand[k].second);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Row i of a top-n output (count[i] ids from out[i * keep]), sorted.
std::vector<int64_t> got_ids(const std::vector<int64_t>& out, const std::vector<int64_t>& counts, std::size_t i,
                             std::size_t keep) {
  const auto start = out.begin() + static_cast<std::ptrdiff_t>(i * keep);
  std::vector<int64_t> ids(start, start + static_cast<std::ptrdiff_t>(counts[i]));
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("int8_scan equals the plain loop bit for bit (every dim tail, row tail, batch)") {
  std::mt19937 rng(11);
  const std::size_t dims[] = {1, 7, 16, 33, 64, 100, 127, 128, 384, 768};
  const std::size_t rows[] = {0, 1, 3, 4, 5, 255, 256, 257, 1030};
  for (std::size_t d : dims) {
    for (std::size_t n : rows) {
      for (std::size_t m : {std::size_t{1}, std::size_t{3}}) {
        for (bool extreme : {false, true}) {
          const Case c = random_case(rng, m, n, d, extreme);
          const Int8Rows r{c.codes.data(), c.scales.data(), n, d};
          std::vector<float> fast(m * n, -1.0f), portable(m * n, -1.0f), threaded(m * n, -1.0f);
          int8_scan(c.q.data(), c.q_scales.data(), m, r, fast.data(), 1);
          int8_scan(c.q.data(), c.q_scales.data(), m, r, threaded.data(), 3);
          int8_scan_portable(c.q.data(), c.q_scales.data(), m, r, portable.data());
          const std::vector<float> want = naive(c);
          const std::string at = std::string(int8_dot_isa()) + " d=" + std::to_string(d) + " n=" + std::to_string(n);
          if (!same_bits(fast, want)) toolsift_test::report(__FILE__, __LINE__, "vector path differs: " + at);
          if (!same_bits(threaded, want)) toolsift_test::report(__FILE__, __LINE__, "threaded differs: " + at);
          if (!same_bits(portable, want)) toolsift_test::report(__FILE__, __LINE__, "portable differs: " + at);
        }
      }
    }
  }
}

TEST_CASE("int8_scan with dim 0 writes zeros") {
  std::vector<int8_t> q, codes;
  std::vector<float> qs{1.0f}, s{1.0f, 2.0f}, out(2, -1.0f);
  const Int8Rows r{codes.data(), s.data(), 2, 0};
  int8_scan(q.data(), qs.data(), 1, r, out.data(), 1);
  CHECK_EQ(out[0], 0.0f);
  CHECK_EQ(out[1], 0.0f);
}

TEST_CASE("int8_gather equals the scan's entries bit for bit (repeats, empty queries, threads)") {
  std::mt19937 rng(12);
  for (std::size_t d : {std::size_t{5}, std::size_t{64}, std::size_t{100}, std::size_t{384}}) {
    const std::size_t n = 300, m = 150;  // m above one thread's share: the threaded path runs
    const Case c = random_case(rng, m, n, d, false);
    const Int8Rows r{c.codes.data(), c.scales.data(), n, d};
    std::vector<float> full(m * n);
    int8_scan_portable(c.q.data(), c.q_scales.data(), m, r, full.data());
    std::uniform_int_distribution<int> count(0, 9), row(0, static_cast<int>(n) - 1);
    std::vector<int64_t> ptr{0}, ids;
    for (std::size_t i = 0; i < m; ++i) {
      const int k = i % 7 == 0 ? 0 : count(rng);  // some queries with no candidate
      for (int j = 0; j < k; ++j) ids.push_back(row(rng));  // repeats allowed
      ptr.push_back(static_cast<int64_t>(ids.size()));
    }
    std::vector<float> want(ids.size());
    for (std::size_t i = 0; i < m; ++i) {
      for (int64_t t = ptr[i]; t < ptr[i + 1]; ++t) want[t] = full[i * n + static_cast<std::size_t>(ids[t])];
    }
    for (int threads : {1, 2}) {
      std::vector<float> got(ids.size(), -1.0f);
      int8_gather(c.q.data(), c.q_scales.data(), m, r, ptr.data(), ids.data(), got.data(), threads);
      if (!same_bits(got, want)) {
        toolsift_test::report(__FILE__, __LINE__, std::string("gather differs: ") + int8_dot_isa() + " d=" +
                                                      std::to_string(d) + " threads=" + std::to_string(threads));
      }
    }
    std::vector<float> portable(ids.size(), -1.0f);
    int8_gather_portable(c.q.data(), c.q_scales.data(), m, r, ptr.data(), ids.data(), portable.data());
    CHECK(same_bits(portable, want));
  }
}

TEST_CASE("int8_top keeps the best n positive keys, ties to the lower key (against a sort)") {
  std::mt19937 rng(13);
  for (std::size_t n_rows : {std::size_t{0}, std::size_t{3}, std::size_t{257}, std::size_t{1000}}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{30}, std::size_t{2000}}) {
      const std::size_t m = 70, d = 8;  // d = 8 and few code values: many ties, many non-positive
      Case c = random_case(rng, m, n_rows, d, false);
      std::uniform_int_distribution<int> small(-2, 2);
      for (auto& v : c.codes) v = static_cast<int8_t>(small(rng));
      for (auto& v : c.scales) v = 1.0f;
      const Int8Rows r{c.codes.data(), c.scales.data(), n_rows, d};
      std::vector<int64_t> keys(n_rows);
      for (std::size_t j = 0; j < n_rows; ++j) keys[j] = static_cast<int64_t>(3 * j + 1);  // distinct, not 0..n
      std::vector<float> full(m * n_rows);
      int8_scan_portable(c.q.data(), c.q_scales.data(), m, r, full.data());
      for (int threads : {1, 2}) {
        std::vector<int64_t> out(m * n, -1), counts(m, -1);
        int8_top(c.q.data(), c.q_scales.data(), m, r, keys.data(), n, out.data(), counts.data(), threads);
        for (std::size_t i = 0; i < m; ++i) {
          std::vector<std::pair<float, int64_t>> all;
          for (std::size_t j = 0; j < n_rows; ++j) {
            if (full[i * n_rows + j] > 0.0f) all.emplace_back(full[i * n_rows + j], keys[j]);
          }
          std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
          });
          if (all.size() > n) all.resize(n);
          std::vector<int64_t> want, got(out.begin() + static_cast<std::ptrdiff_t>(i * n),
                                          out.begin() + static_cast<std::ptrdiff_t>(i * n + counts[i]));
          for (const auto& p : all) want.push_back(p.second);
          std::sort(want.begin(), want.end());
          std::sort(got.begin(), got.end());
          CHECK_EQ(static_cast<std::size_t>(counts[i]), want.size());
          CHECK(got == want);
        }
      }
    }
  }
}

TEST_CASE("int8_probe scores every row of each probed list, in probe order") {
  std::mt19937 rng(14);
  const std::size_t n = 90, d = 70, m = 4;
  const Case c = random_case(rng, m, n, d, false);
  const Int8Rows lists{c.codes.data(), c.scales.data(), n, d};
  const std::vector<int64_t> list_ptr{0, 10, 10, 55, 90};  // list 1 is empty
  std::vector<int64_t> list_ids(n);
  for (std::size_t j = 0; j < n; ++j) list_ids[j] = static_cast<int64_t>(1000 + 7 * j);
  const std::vector<int64_t> probe_ptr{0, 2, 3, 3, 6}, probes{3, 0, 1, 2, 3, 0};  // query 2 probes nothing
  std::vector<float> full(m * n);
  int8_scan_portable(c.q.data(), c.q_scales.data(), m, lists, full.data());
  std::vector<int64_t> out_ptr{0};
  std::vector<float> want;
  std::vector<int64_t> want_ids;
  for (std::size_t i = 0; i < m; ++i) {
    for (int64_t p = probe_ptr[i]; p < probe_ptr[i + 1]; ++p) {
      for (int64_t t = list_ptr[probes[p]]; t < list_ptr[probes[p] + 1]; ++t) {
        want.push_back(full[i * n + static_cast<std::size_t>(t)]);
        want_ids.push_back(list_ids[t]);
      }
    }
    out_ptr.push_back(static_cast<int64_t>(want.size()));
  }
  for (int threads : {1, 2}) {
    std::vector<float> got(want.size(), -1.0f);
    std::vector<int64_t> got_ids(want.size(), -1);
    int8_probe(c.q.data(), c.q_scales.data(), m, lists, list_ptr.data(), list_ids.data(), probe_ptr.data(),
               probes.data(), out_ptr.data(), got.data(), got_ids.data(), threads);
    CHECK(same_bits(got, want));
    CHECK(got_ids == want_ids);
  }
}

TEST_CASE("int8_probe_top keeps the best positive ids of the probed rows (ties to the lower id)") {
  std::mt19937 rng(15);
  const std::size_t n = 700, d = 96, m = 5;
  Case c = random_case(rng, m, n, d, false);
  for (std::size_t j = 300; j < 340; ++j) {  // repeated rows: equal scores, decided by id
    std::copy(c.codes.begin() + 300 * d, c.codes.begin() + 301 * d, c.codes.begin() + static_cast<std::ptrdiff_t>(j * d));
    c.scales[j] = c.scales[300];
  }
  const Int8Rows lists{c.codes.data(), c.scales.data(), n, d};
  const std::vector<int64_t> list_ptr{0, 10, 10, 300, 650, 700};  // list 1 is empty; list 3 > one block
  std::vector<int64_t> list_ids(n);
  for (std::size_t j = 0; j < n; ++j) list_ids[j] = static_cast<int64_t>(5000 - 3 * j);  // descending ids
  const std::vector<int64_t> probe_ptr{0, 2, 3, 3, 6, 11}, probes{3, 0, 1, 2, 3, 0, 4, 3, 2, 1, 0};
  std::vector<float> full(m * n);
  int8_scan_portable(c.q.data(), c.q_scales.data(), m, lists, full.data());
  for (std::size_t keep : {std::size_t{1}, std::size_t{7}, std::size_t{40}, std::size_t{700}}) {
    for (int threads : {1, 2}) {
      std::vector<int64_t> out(m * keep, -1), counts(m, -1);
      int8_probe_top(c.q.data(), c.q_scales.data(), m, lists, list_ptr.data(), list_ids.data(), probe_ptr.data(),
                     probes.data(), keep, out.data(), counts.data(), threads);
      for (std::size_t i = 0; i < m; ++i) {
        std::vector<std::pair<float, int64_t>> cand;  // (score, id) of every probed row
        for (int64_t p = probe_ptr[i]; p < probe_ptr[i + 1]; ++p) {
          for (int64_t t = list_ptr[probes[p]]; t < list_ptr[probes[p] + 1]; ++t) {
            cand.emplace_back(full[i * n + static_cast<std::size_t>(t)], list_ids[t]);
          }
        }
        CHECK(got_ids(out, counts, i, keep) == best_ids(cand, keep));
      }
    }
  }
}

TEST_CASE("a scan and a top-n over a matrix too large for cache (rows read in address order) equal the plain loop") {
  std::mt19937 rng(16);
  const std::size_t d = 384, n = (std::size_t{16} << 20) / d + 37;  // just over the streamed size
  const Case c = random_case(rng, 2, n, d, false);
  const Int8Rows r{c.codes.data(), c.scales.data(), n, d};
  std::vector<float> fast(2 * n, -1.0f), portable(2 * n, -1.0f);
  int8_scan(c.q.data(), c.q_scales.data(), 2, r, fast.data(), 1);
  int8_scan_portable(c.q.data(), c.q_scales.data(), 2, r, portable.data());
  CHECK(same_bits(fast, portable));
  std::vector<int64_t> keys(n);
  for (std::size_t j = 0; j < n; ++j) keys[j] = static_cast<int64_t>(j);
  const std::size_t keep = 25;
  std::vector<int64_t> out(2 * keep), counts(2);
  int8_top(c.q.data(), c.q_scales.data(), 2, r, keys.data(), keep, out.data(), counts.data(), 1);
  for (std::size_t i = 0; i < 2; ++i) {
    std::vector<std::pair<float, int64_t>> all;
    for (std::size_t j = 0; j < n; ++j) all.emplace_back(portable[i * n + j], static_cast<int64_t>(j));
    CHECK(got_ids(out, counts, i, keep) == best_ids(all, keep));
  }
}
