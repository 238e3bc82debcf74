// The interner against a plain tokenizer written here: maximal [A-Za-z0-9_] runs of two
// or more characters, lowercased, ids in first-seen order.
#include <cctype>
#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"
#include "toolsift/interner.h"

using namespace toolsift;

namespace {

std::vector<std::string> ref_words(const std::string& text, bool lowercase) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (cur.size() >= 2) out.push_back(cur);
    cur.clear();
  };
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '_') {
      cur.push_back(lowercase ? static_cast<char>(std::tolower(c)) : ch);
    } else {
      flush();
    }
  }
  flush();
  return out;
}

}  // namespace

TEST_CASE("intern equals a plain tokenizer; ids stable across calls") {
  std::mt19937 rng(9);
  const std::string alphabet = "abAB_09 ,.-\t\nxyZ";
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> len(0, 40);
  for (const bool lower : {true, false}) {
    Interner in(lower);
    std::map<std::string, int32_t> ref_ids;
    for (int call = 0; call < 5; ++call) {
      std::string buf;
      std::vector<int64_t> offsets{0};
      for (int t = 0; t < 20; ++t) {
        const int n = len(rng);
        for (int i = 0; i < n; ++i) buf.push_back(alphabet[pick(rng)]);
        offsets.push_back(static_cast<int64_t>(buf.size()));
      }
      std::vector<int32_t> ids;
      std::vector<int64_t> counts;
      in.intern(buf.data(), buf.size(), offsets.data(), offsets.size() - 1, ids, counts);
      CHECK_EQ(counts.size(), offsets.size() - 1);
      std::size_t pos = 0;
      for (std::size_t t = 0; t + 1 < offsets.size(); ++t) {
        const auto words = ref_words(buf.substr(offsets[t], offsets[t + 1] - offsets[t]), lower);
        CHECK_EQ(counts[t], static_cast<int64_t>(words.size()));
        for (const auto& w : words) {
          const auto it = ref_ids.emplace(w, static_cast<int32_t>(ref_ids.size())).first;
          CHECK(pos < ids.size());
          if (pos < ids.size()) {
            CHECK_EQ(ids[pos], it->second);
            CHECK_EQ(in.word(static_cast<std::size_t>(ids[pos])), w);
          }
          ++pos;
        }
      }
      CHECK_EQ(pos, ids.size());
      CHECK_EQ(in.size(), ref_ids.size());
    }
  }
}

TEST_CASE("intern rejects bad offsets and non-ASCII bytes before interning anything") {
  Interner in(true);
  const std::string buf = "hello world";
  std::vector<int32_t> ids;
  std::vector<int64_t> counts;
  const std::vector<int64_t> past_end{0, 20};
  CHECK_THROWS(in.intern(buf.data(), buf.size(), past_end.data(), 1, ids, counts), std::invalid_argument, "offsets");
  const std::vector<int64_t> down{0, 5, 3};
  CHECK_THROWS(in.intern(buf.data(), buf.size(), down.data(), 2, ids, counts), std::invalid_argument, "offsets");
  const std::vector<int64_t> negative{-1, 3};
  CHECK_THROWS(in.intern(buf.data(), buf.size(), negative.data(), 1, ids, counts), std::invalid_argument, "offsets");
  const std::string utf8 = "caf\xc3\xa9 ok";
  const std::vector<int64_t> all{0, static_cast<int64_t>(utf8.size())};
  CHECK_THROWS(in.intern(utf8.data(), utf8.size(), all.data(), 1, ids, counts), std::invalid_argument, "");
  CHECK_EQ(in.size(), std::size_t{0});
}
