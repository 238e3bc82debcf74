// The inverted index against a plain reimplementation: BM25 computed straight from the
// token lists (doubles, no postings), top-k / candidates / gather against sorting and
// indexing the engine's own dense scores (which the header promises bit for bit).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "check.h"
#include "toolsift/inverted_index.h"

using namespace toolsift;

namespace {

struct Corpus {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  int32_t n_terms = 0;
  std::vector<int32_t> group;  // doc -> group
  int32_t n_groups = 0;
  std::size_t n_docs() const { return offsets.size() - 1; }
};

// Zipf-like term draws so some postings are long (MaxScore, galloping) and most short.
Corpus make_corpus(std::mt19937& rng, std::size_t n_docs, int32_t n_terms, int max_len, bool contiguous_groups) {
  Corpus c;
  c.n_terms = n_terms;
  std::uniform_int_distribution<int> len(0, max_len);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t d = 0; d < n_docs; ++d) {
    const int n = len(rng);
    for (int i = 0; i < n; ++i) {
      const auto t = static_cast<int32_t>(std::pow(u(rng), 3.0) * n_terms);
      c.tokens.push_back(std::min(t, n_terms - 1));
    }
    c.offsets.push_back(static_cast<int64_t>(c.tokens.size()));
  }
  // Groups: contiguous runs of 1-3 documents, or a random assignment; the last group
  // id is left without documents on purpose.
  int32_t g = 0;
  std::uniform_int_distribution<int> run(1, 3);
  for (std::size_t d = 0; d < n_docs;) {
    const int r = run(rng);
    for (int i = 0; i < r && d < n_docs; ++i, ++d) c.group.push_back(g);
    ++g;
  }
  c.n_groups = g + 1;
  if (!contiguous_groups) std::shuffle(c.group.begin(), c.group.end(), rng);
  return c;
}

double ref_bm25(const Corpus& c, const Bm25Params& p, const std::vector<int32_t>& query, std::size_t d) {
  const double n = static_cast<double>(c.n_docs());
  double total = 0.0;
  for (std::size_t i = 0; i < c.n_docs(); ++i) total += static_cast<double>(c.offsets[i + 1] - c.offsets[i]);
  const double avgdl = total / n;
  double score = 0.0;
  for (const int32_t t : query) {
    if (t < 0) continue;
    std::size_t df = 0;
    for (std::size_t i = 0; i < c.n_docs(); ++i) {
      if (std::find(c.tokens.begin() + c.offsets[i], c.tokens.begin() + c.offsets[i + 1], t) !=
          c.tokens.begin() + c.offsets[i + 1])
        ++df;
    }
    const double tf = static_cast<double>(std::count(c.tokens.begin() + c.offsets[d], c.tokens.begin() + c.offsets[d + 1], t));
    if (tf == 0) continue;
    const double idf = p.method == Bm25Method::kAtire ? std::log(n / static_cast<double>(df))
                                                      : std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    const double len = static_cast<double>(c.offsets[d + 1] - c.offsets[d]);
    score += idf * tf / (tf + p.k1 * (1.0 - p.b + p.b * len / avgdl));
  }
  return score;
}

struct Queries {
  std::vector<int32_t> terms;
  std::vector<int64_t> offsets{0};
  QueryBatch batch() const { return QueryBatch{terms.data(), offsets.data(), offsets.size() - 1}; }
  std::vector<int32_t> text(std::size_t i) const {
    return std::vector<int32_t>(terms.begin() + offsets[i], terms.begin() + offsets[i + 1]);
  }
};

// Texts of 0-6 terms, with repeats and out-of-vocabulary (-1) tokens.
Queries make_queries(std::mt19937& rng, std::size_t n, int32_t n_terms) {
  Queries q;
  std::uniform_int_distribution<int> len(0, 6), term(-1, n_terms - 1);
  for (std::size_t i = 0; i < n; ++i) {
    const int m = len(rng);
    for (int j = 0; j < m; ++j) q.terms.push_back(term(rng));
    q.offsets.push_back(static_cast<int64_t>(q.terms.size()));
  }
  return q;
}

InvertedIndex build(const Corpus& c, bool grouped, const Bm25Params& p) {
  return InvertedIndex::build(c.tokens.data(), c.offsets.data(), c.n_docs(), c.n_terms, c.group.data(), grouped,
                              c.n_groups, p);
}

// Best k of a dense row: positive scores, higher first, ties by lower id, padded.
void expected_topk(const float* row, std::size_t width, std::size_t k, std::vector<int64_t>& ids,
                   std::vector<float>& scores) {
  std::vector<int64_t> order;
  for (std::size_t i = 0; i < width; ++i)
    if (row[i] > 0) order.push_back(static_cast<int64_t>(i));
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
  ids.assign(k, -1);
  scores.assign(k, 0.0f);
  for (std::size_t i = 0; i < k && i < order.size(); ++i) {
    ids[i] = order[i];
    scores[i] = row[order[i]];
  }
}

}  // namespace

TEST_CASE("score_dense equals BM25 computed from the token lists") {
  std::mt19937 rng(1);
  for (const auto method : {Bm25Method::kLucene, Bm25Method::kAtire}) {
    const Corpus c = make_corpus(rng, 120, 40, 12, true);
    Bm25Params p;
    p.k1 = 1.2;
    p.b = 0.4;
    p.method = method;
    const InvertedIndex idx = build(c, false, p);
    CHECK_EQ(idx.n_docs(), c.n_docs());
    const Queries q = make_queries(rng, 30, c.n_terms);
    std::vector<float> out(q.offsets.size() - 1 >= 1 ? (q.offsets.size() - 1) * idx.n_docs() : 0);
    idx.score_dense(q.batch(), Scale::kRaw, false, out.data(), 1);
    for (std::size_t i = 0; i + 1 < q.offsets.size(); ++i) {
      for (std::size_t d = 0; d < c.n_docs(); ++d) {
        CHECK_NEAR(out[i * idx.n_docs() + d], ref_bm25(c, p, q.text(i), d), 1e-5);
      }
    }
  }
}

TEST_CASE("scales: bounded and linear map raw scores by the idf sum") {
  std::mt19937 rng(2);
  const Corpus c = make_corpus(rng, 80, 30, 10, true);
  Bm25Params p;
  const InvertedIndex idx = build(c, false, p);
  const Queries q = make_queries(rng, 20, c.n_terms);
  const std::size_t nq = q.offsets.size() - 1, nd = idx.n_docs();
  std::vector<float> raw(nq * nd), bounded(nq * nd), linear(nq * nd);
  idx.score_dense(q.batch(), Scale::kRaw, false, raw.data(), 1);
  idx.score_dense(q.batch(), Scale::kBounded, false, bounded.data(), 2);
  idx.score_dense(q.batch(), Scale::kLinear, false, linear.data(), 2);
  for (std::size_t i = 0; i < nq; ++i) {
    const auto text = q.text(i);
    double ub = 0.0;
    for (const int32_t t : text)
      if (t >= 0) ub += idx.idf()[static_cast<std::size_t>(t)];
    CHECK_NEAR(idx.upper_bound(text.data(), text.size()), ub, 1e-9);
    for (std::size_t d = 0; d < nd; ++d) {
      const double r = raw[i * nd + d];
      CHECK(r <= ub * (1 + 1e-6));
      CHECK_NEAR(bounded[i * nd + d], ub > 0 ? 1.0 - std::exp(-r * (1.0 + p.k1) / ub) : 0.0, 1e-6);
      CHECK_NEAR(linear[i * nd + d], ub > 0 ? r / ub : 0.0, 1e-6);
      CHECK(bounded[i * nd + d] >= 0.0f && bounded[i * nd + d] < 1.0f);
    }
  }
}

TEST_CASE("grouped scores are the max over each group's documents") {
  std::mt19937 rng(3);
  for (const bool contiguous : {true, false}) {
    const Corpus c = make_corpus(rng, 150, 40, 8, contiguous);
    const InvertedIndex idx = build(c, true, Bm25Params{});
    CHECK_EQ(idx.n_groups(), static_cast<std::size_t>(c.n_groups));
    const Queries q = make_queries(rng, 25, c.n_terms);
    const std::size_t nq = q.offsets.size() - 1, nd = idx.n_docs(), ng = idx.n_groups();
    std::vector<float> docs(nq * nd), groups(nq * ng);
    idx.score_dense(q.batch(), Scale::kRaw, false, docs.data(), 1);
    idx.score_dense(q.batch(), Scale::kRaw, true, groups.data(), 1);
    for (std::size_t i = 0; i < nq; ++i) {
      std::vector<float> want(ng, 0.0f);
      for (std::size_t d = 0; d < nd; ++d) want[c.group[d]] = std::max(want[c.group[d]], docs[i * nd + d]);
      for (std::size_t g = 0; g < ng; ++g) CHECK_EQ(groups[i * ng + g], want[g]);
      CHECK_EQ(groups[i * ng + ng - 1], 0.0f);  // the empty group
    }
  }
}

TEST_CASE("topk (exhaustive and MaxScore, 1 and 2 threads) equals sorting the dense scores") {
  std::mt19937 rng(4);
  // 20,000 documents: several 8192-document windows, long postings for MaxScore.
  for (const bool contiguous : {true, false}) {
    const Corpus c = make_corpus(rng, 20000, 300, 12, contiguous);
    const InvertedIndex idx = build(c, true, Bm25Params{});
    const Queries q = make_queries(rng, 40, c.n_terms);
    const std::size_t nq = q.offsets.size() - 1;
    for (const bool group : {false, true}) {
      for (const Scale scale : {Scale::kRaw, Scale::kBounded}) {
        const std::size_t width = idx.out_width(group);
        std::vector<float> dense(nq * width);
        idx.score_dense(q.batch(), scale, group, dense.data(), 1);
        for (const std::size_t k : {std::size_t{1}, std::size_t{10}, std::size_t{300}}) {
          for (const Prune prune : {Prune::kExhaustive, Prune::kMaxScore, Prune::kAuto}) {
            for (const int threads : {1, 2}) {
              std::vector<int64_t> ids(nq * k);
              std::vector<float> scores(nq * k);
              idx.topk(q.batch(), k, scale, group, ids.data(), scores.data(), threads, prune);
              for (std::size_t i = 0; i < nq; ++i) {
                std::vector<int64_t> want_ids;
                std::vector<float> want_scores;
                expected_topk(dense.data() + i * width, width, k, want_ids, want_scores);
                const bool same_ids = std::equal(want_ids.begin(), want_ids.end(), ids.begin() + i * k);
                const bool same_scores = std::equal(want_scores.begin(), want_scores.end(), scores.begin() + i * k);
                CHECK(same_ids);
                CHECK(same_scores);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("candidates are the union of each text's top-n; gather equals the dense scores") {
  std::mt19937 rng(5);
  const Corpus c = make_corpus(rng, 3000, 120, 10, true);
  const InvertedIndex idx = build(c, true, Bm25Params{});
  const Queries q = make_queries(rng, 30, c.n_terms);
  const std::size_t n_texts = q.offsets.size() - 1;
  // Texts 3 by 3 into queries.
  std::vector<int64_t> text_query(n_texts);
  for (std::size_t i = 0; i < n_texts; ++i) text_query[i] = static_cast<int64_t>(i / 3);
  const TextQueries tq{text_query.data(), (n_texts + 2) / 3};
  for (const bool group : {false, true}) {
    const std::size_t width = idx.out_width(group), n = 7;
    std::vector<float> dense(n_texts * width);
    idx.score_dense(q.batch(), Scale::kBounded, group, dense.data(), 1);
    std::vector<int64_t> cand_ids;
    const auto ptr = idx.candidates(q.batch(), tq, n, Scale::kBounded, group, 2, Prune::kAuto, cand_ids);
    CHECK_EQ(ptr.size(), tq.n_queries + 1);
    for (std::size_t qi = 0; qi < tq.n_queries; ++qi) {
      std::set<int64_t> want;
      for (std::size_t i = 0; i < n_texts; ++i) {
        if (static_cast<std::size_t>(text_query[i]) != qi) continue;
        std::vector<int64_t> ids;
        std::vector<float> scores;
        expected_topk(dense.data() + i * width, width, n, ids, scores);
        for (const int64_t id : ids)
          if (id >= 0) want.insert(id);
      }
      const std::vector<int64_t> got(cand_ids.begin() + ptr[qi], cand_ids.begin() + ptr[qi + 1]);
      CHECK(std::vector<int64_t>(want.begin(), want.end()) == got);
    }
    // Gather over random candidate sets (some empty, some everything).
    std::vector<int64_t> cptr{0}, cids;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (std::size_t qi = 0; qi < tq.n_queries; ++qi) {
      const double keep = qi % 5 == 0 ? 0.0 : (qi % 5 == 1 ? 1.0 : u(rng) * 0.2);
      for (std::size_t id = 0; id < width; ++id)
        if (keep >= 1.0 || u(rng) < keep) cids.push_back(static_cast<int64_t>(id));
      cptr.push_back(static_cast<int64_t>(cids.size()));
    }
    const CandidateSet cs{cptr.data(), cids.data()};
    idx.check_candidates(cs, tq.n_queries, cids.size(), group);
    const auto off = InvertedIndex::gather_offsets(n_texts, tq, cs);
    std::vector<float> out(static_cast<std::size_t>(off.back()), -1.0f);
    idx.gather(q.batch(), tq, cs, Scale::kBounded, group, off.data(), out.data(), 2);
    for (std::size_t i = 0; i < n_texts; ++i) {
      const auto qi = static_cast<std::size_t>(text_query[i]);
      CHECK_EQ(off[i + 1] - off[i], cptr[qi + 1] - cptr[qi]);
      for (int64_t j = cptr[qi]; j < cptr[qi + 1]; ++j) {
        CHECK_EQ(out[off[i] + (j - cptr[qi])], dense[i * width + static_cast<std::size_t>(cids[j])]);
      }
    }
  }
}

TEST_CASE("build: repeated terms become one posting with tf; postings sorted") {
  const std::vector<int32_t> tokens{0, 1, 0, 2, 1, 1};
  const std::vector<int64_t> offsets{0, 3, 3, 6};  // doc 1 is empty
  const InvertedIndex idx = InvertedIndex::build(tokens.data(), offsets.data(), 3, 4, nullptr, false, 0, Bm25Params{});
  const auto& cols = idx.columns();
  CHECK_EQ(idx.n_terms(), std::size_t{4});
  CHECK_EQ(idx.nnz(), std::size_t{4});
  const std::vector<int64_t> indptr(cols.indptr.begin(), cols.indptr.end());
  CHECK((indptr == std::vector<int64_t>{0, 1, 3, 4, 4}));
  CHECK((std::vector<int32_t>(cols.doc_ids.begin(), cols.doc_ids.end()) == std::vector<int32_t>{0, 0, 2, 2}));
  CHECK((std::vector<int32_t>(cols.tfs.begin(), cols.tfs.end()) == std::vector<int32_t>{2, 1, 2, 1}));
  CHECK((std::vector<int32_t>(cols.doc_len.begin(), cols.doc_len.end()) == std::vector<int32_t>{3, 0, 3}));
  CHECK_NEAR(idx.avgdl(), 2.0, 1e-12);
}

TEST_CASE("bad input throws std::invalid_argument naming the problem") {
  const std::vector<int32_t> tokens{0, 5};
  const std::vector<int64_t> offsets{0, 2};
  CHECK_THROWS(InvertedIndex::build(tokens.data(), offsets.data(), 1, 3, nullptr, false, 0, Bm25Params{}),
               std::invalid_argument, "token id 5");
  const std::vector<int64_t> bad_offsets{0, 2, 1};
  CHECK_THROWS(InvertedIndex::build(tokens.data(), bad_offsets.data(), 2, 6, nullptr, false, 0, Bm25Params{}),
               std::invalid_argument, "non-decreasing");
  Bm25Params bad;
  bad.b = 2.0;
  CHECK_THROWS(bad.validate(), std::invalid_argument, "b must be");
  bad = Bm25Params{};
  bad.k1 = std::nan("");
  CHECK_THROWS(bad.validate(), std::invalid_argument, "k1");

  auto columns = [](std::vector<int64_t> ip, std::vector<int32_t> docs, std::vector<int32_t> tfs,
                    std::vector<int32_t> len, std::vector<int32_t> group) {
    IndexColumns c;
    c.indptr = Column<int64_t>::owned(std::move(ip));
    c.doc_ids = Column<int32_t>::owned(std::move(docs));
    c.tfs = Column<int32_t>::owned(std::move(tfs));
    c.doc_len = Column<int32_t>::owned(std::move(len));
    c.doc_group = Column<int32_t>::owned(std::move(group));
    return c;
  };
  const Bm25Params p;
  CHECK_THROWS(InvertedIndex::from_columns(columns({}, {}, {}, {}, {}), false, 0, p), std::invalid_argument, "at least one");
  CHECK_THROWS(InvertedIndex::from_columns(columns({1, 1}, {0}, {1}, {1}, {}), false, 0, p), std::invalid_argument, "indptr[0]");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 2, 1}, {0}, {1}, {1}, {}), false, 0, p), std::invalid_argument, "decreasing");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 2}, {0}, {1}, {1}, {}), false, 0, p), std::invalid_argument, "doc_ids has");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 1}, {0}, {1, 1}, {1}, {}), false, 0, p), std::invalid_argument, "differ");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 1}, {3}, {1}, {1}, {}), false, 0, p), std::invalid_argument, "outside [0, n_docs)");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 2}, {1, 0}, {1, 1}, {1, 1}, {}), false, 0, p), std::invalid_argument, "strictly increasing");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 1}, {0}, {0}, {1}, {}), false, 0, p), std::invalid_argument, "positive");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 1}, {0}, {1}, {-1}, {}), false, 0, p), std::invalid_argument, "negative");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 1}, {0}, {1}, {1}, {}), true, 1, p), std::invalid_argument, "one entry per document");
  CHECK_THROWS(InvertedIndex::from_columns(columns({0, 1}, {0}, {1}, {1}, {4}), true, 2, p), std::invalid_argument, "outside [0, n_groups)");

  const InvertedIndex idx = InvertedIndex::from_columns(columns({0, 1, 1}, {0}, {1}, {1}, {}), false, 0, p);
  const std::vector<int32_t> terms{0, 2};
  const std::vector<int64_t> qoff{0, 2};
  CHECK_THROWS(idx.check_batch(QueryBatch{terms.data(), qoff.data(), 1}, 2), std::invalid_argument, ">= n_terms");
  const std::vector<int64_t> qoff_bad{0, 3};
  CHECK_THROWS(idx.check_batch(QueryBatch{terms.data(), qoff_bad.data(), 1}, 2), std::invalid_argument, "offsets[-1]");
  const std::vector<int64_t> tq{0, 1};
  CHECK_THROWS(InvertedIndex::check_text_queries(TextQueries{tq.data(), 1}, 2), std::invalid_argument, "text_query[1]");
  const std::vector<int64_t> tq_down{1, 0};
  CHECK_THROWS(InvertedIndex::check_text_queries(TextQueries{tq_down.data(), 2}, 2), std::invalid_argument, "decreases");
  const std::vector<int64_t> cptr{0, 2}, cids{0, 0}, cids_out{0, 5};
  CHECK_THROWS(idx.check_candidates(CandidateSet{cptr.data(), cids.data()}, 1, 2, false), std::invalid_argument, "");
  CHECK_THROWS(idx.check_candidates(CandidateSet{cptr.data(), cids_out.data()}, 1, 2, false), std::invalid_argument, "");
  CHECK_THROWS(idx.check_candidates(CandidateSet{cptr.data(), cids.data()}, 1, 3, false), std::invalid_argument, "cand_ptr[-1]");
}

TEST_CASE("an empty index scores nothing and pads top-k") {
  const std::vector<int64_t> offsets{0};
  const InvertedIndex idx = InvertedIndex::build(nullptr, offsets.data(), 0, 0, nullptr, false, 0, Bm25Params{});
  CHECK_EQ(idx.n_docs(), std::size_t{0});
  const std::vector<int32_t> terms{-1};
  const std::vector<int64_t> qoff{0, 1};
  std::vector<int64_t> ids(3, 7);
  std::vector<float> scores(3, 7.0f);
  idx.topk(QueryBatch{terms.data(), qoff.data(), 1}, 3, Scale::kBounded, false, ids.data(), scores.data(), 1);
  CHECK((ids == std::vector<int64_t>{-1, -1, -1}));
  CHECK((scores == std::vector<float>{0, 0, 0}));
}
