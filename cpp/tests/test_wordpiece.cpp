// WordPiece: FastWordPiece's split and greedy longest-match-first pieces on a small vocabulary,
// and the texts it refuses (the Python twin and tokenizers are compared in tests/test_hybrid_text.py).
#include <string>
#include <unordered_map>
#include <vector>

#include "check.h"
#include "toolsift/wordpiece.h"

using namespace toolsift;

namespace {

WordPiece small() {
  std::unordered_map<std::string, int32_t> vocab{{"[UNK]", 0}, {"[CLS]", 1}, {"book", 2},  {"##ing", 3},
                                                 {"##s", 4},   {"a", 5},     {"fl", 6},    {"##ight", 7},
                                                 {"!", 8},     {"-", 9},     {"3", 10},    {"flight", 11}};
  return WordPiece(std::move(vocab), 0, "##", 10, {"[CLS]", "[cls]"});
}

std::vector<int32_t> ids(const WordPiece& wp, const std::string& text, bool* ok = nullptr) {
  std::vector<int32_t> out;
  const bool got = wp.ids(text.data(), text.size(), out);
  if (ok) *ok = got;
  return out;
}

}  // namespace

TEST_CASE("WordPiece splits words and punctuation and takes the longest pieces") {
  const WordPiece wp = small();
  CHECK(ids(wp, "Booking a FLIGHT!") == (std::vector<int32_t>{2, 3, 5, 11, 8}));
  CHECK(ids(wp, "flights\tbooks\n3-a") == (std::vector<int32_t>{11, 4, 2, 4, 10, 9, 5}));
  // One piece that does not exist makes the whole word unknown; so does an over-long word.
  CHECK(ids(wp, "bookx flx") == (std::vector<int32_t>{0, 0}));
  CHECK(ids(wp, "bookingbookings") == (std::vector<int32_t>{0}));
  CHECK(ids(wp, "").empty());
  CHECK(ids(wp, "   ").empty());
}

TEST_CASE("WordPiece refuses control characters and added tokens, and leaves out unchanged") {
  const WordPiece wp = small();
  for (const std::string& text : {std::string("book\x07 a"), std::string("a [CLS] b"), std::string("A [cls] B"),
                                 std::string("x\x7f")}) {
    bool ok = true;
    CHECK(ids(wp, text, &ok).empty());
    CHECK(!ok);
  }
  bool ok = false;
  ids(wp, "book\r\n", &ok);  // CR and LF are spaces
  CHECK(ok);
}
