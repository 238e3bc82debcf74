// MaxScore top-n (cpp/src/maxscore.cpp) against a brute-force ranking written here from the
// token lists: per document, each query term's BM25 weight (df and tf counted from the
// tokens, not the postings) added in query order, the max over a group's documents, the
// scale, then a full sort by (score desc, id asc). The corpus has common terms with long
// postings over many 4096-document windows, so queries take every MaxScore step: the
// first floor (with long lists left out of its seed scores), non-essential terms held in
// arrays, galloping lookups, and exact ties from duplicated documents.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "check.h"
#include "scoring_detail.h"
#include "toolsift/bm25.h"
#include "toolsift/inverted_index.h"

using namespace toolsift;

namespace {

struct Docs {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> group;
  int32_t n_groups = 0;
  std::size_t size() const { return offsets.size() - 1; }
};

// Terms drawn with a steep power law over n_terms (the first few are in a large share of
// documents); every 50th document from 1,000 on repeats an earlier one, for exact ties.
Docs make_docs(std::mt19937& rng, std::size_t n, int32_t n_terms) {
  Docs c;
  std::uniform_int_distribution<int> len(1, 14);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t d = 0; d < n; ++d) {
    if (d >= 1000 && d % 50 == 0) {
      const std::size_t src = d - 997;
      c.tokens.insert(c.tokens.end(), c.tokens.begin() + c.offsets[src], c.tokens.begin() + c.offsets[src + 1]);
    } else {
      const int m = len(rng);
      for (int i = 0; i < m; ++i) {
        c.tokens.push_back(std::min(static_cast<int32_t>(std::pow(u(rng), 4.0) * n_terms), n_terms - 1));
      }
    }
    c.offsets.push_back(static_cast<int64_t>(c.tokens.size()));
  }
  for (std::size_t d = 0; d < n; ++d) c.group.push_back(static_cast<int32_t>(d / 2));  // two documents a group
  c.n_groups = static_cast<int32_t>((n + 1) / 2);
  return c;
}

// Best n (scaled score, id) of one text by scoring every document.
std::vector<std::pair<float, int64_t>> brute_top(const Docs& c, const Bm25Params& p, const std::vector<int32_t>& text,
                                                 std::size_t n, Scale scale, bool group,
                                                 const std::unordered_map<int32_t, int64_t>& df, double avgdl,
                                                 double ub) {
  const double nd = static_cast<double>(c.size());
  std::vector<float> raw(c.size(), 0.0f);
  for (std::size_t d = 0; d < c.size(); ++d) {
    const auto b = c.tokens.begin() + c.offsets[d], e = c.tokens.begin() + c.offsets[d + 1];
    float s = 0.0f;
    for (const int32_t t : text) {
      const auto tf = std::count(b, e, t);
      if (tf == 0) continue;
      const double idf = bm25_idf(p, nd, static_cast<double>(df.at(t)));
      s += static_cast<float>(idf * bm25_tfc(p, static_cast<double>(tf), static_cast<double>(e - b), avgdl));
    }
    raw[d] = s;
  }
  std::vector<float> row(group ? static_cast<std::size_t>(c.n_groups) : c.size(), 0.0f);
  for (std::size_t d = 0; d < c.size(); ++d) {
    float& r = row[group ? static_cast<std::size_t>(c.group[d]) : d];
    r = std::max(r, raw[d]);
  }
  const detail::Scaler f(scale, ub, p.k1);
  std::vector<std::pair<float, int64_t>> all;
  for (std::size_t i = 0; i < row.size(); ++i) {
    const float v = f(row[i]);
    if (v > 0.0f) all.emplace_back(v, static_cast<int64_t>(i));
  }
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first > y.first || (x.first == y.first && x.second < y.second); });
  if (all.size() > n) all.resize(n);
  return all;
}

}  // namespace

TEST_CASE("MaxScore top-n equals a brute-force ranking of the token lists, ties by lower id") {
  std::mt19937 rng(35);
  const int32_t n_terms = 400;
  const Docs c = make_docs(rng, 24000, n_terms);
  const Bm25Params p{};
  const InvertedIndex idx = InvertedIndex::build(c.tokens.data(), c.offsets.data(), c.size(), n_terms, c.group.data(),
                                                 true, c.n_groups, p);
  std::unordered_map<int32_t, int64_t> df;
  for (std::size_t d = 0; d < c.size(); ++d) {
    std::vector<int32_t> seen(c.tokens.begin() + c.offsets[d], c.tokens.begin() + c.offsets[d + 1]);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (const int32_t t : seen) ++df[t];
  }
  const double avgdl = static_cast<double>(c.tokens.size()) / static_cast<double>(c.size());
  CHECK(df.at(0) > 4000);  // the commonest term's postings span every window

  // Texts of 3-9 terms: common ones (long postings), rarer ones, repeats.
  std::uniform_int_distribution<int> len(3, 9), common(0, 12), any(0, n_terms - 1), coin(0, 2);
  std::size_t compared = 0;
  for (int qi = 0; qi < 24; ++qi) {
    std::vector<int32_t> text;
    const int m = len(rng);
    for (int i = 0; i < m; ++i) text.push_back(coin(rng) ? common(rng) : any(rng));
    text.push_back(text.front());
    std::vector<int32_t> present;
    for (const int32_t t : text) {
      if (df.count(t)) present.push_back(t);
    }
    double ub = 0.0;
    for (const int32_t t : present) ub += idx.idf()[static_cast<std::size_t>(t)];
    const int64_t offs[2] = {0, static_cast<int64_t>(present.size())};
    const QueryBatch q{present.data(), offs, 1};
    for (const std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{40}, std::size_t{100}}) {
      for (const bool group : {false, true}) {
        for (const Scale scale : {Scale::kRaw, Scale::kBounded}) {
          const auto want = brute_top(c, p, present, n, scale, group, df, avgdl, ub);
          std::vector<int64_t> ids(n);
          std::vector<float> scores(n);
          idx.topk(q, n, scale, group, ids.data(), scores.data(), 1, Prune::kMaxScore);
          for (std::size_t r = 0; r < n; ++r) {
            const int64_t want_id = r < want.size() ? want[r].second : -1;
            const float want_score = r < want.size() ? want[r].first : 0.0f;
            CHECK_EQ(ids[r], want_id);
            CHECK_EQ(scores[r], want_score);
          }
          ++compared;
        }
      }
    }
  }
  CHECK_EQ(compared, std::size_t{24 * 4 * 2 * 2});
}
