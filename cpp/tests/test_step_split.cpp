// StepSplitter and its pattern matchers against answers of the Python splitter
// (decompose.steps) and `re`; tests/test_steps_native.py compares the two on every golden
// input and on seeded random text.
#include <string>
#include <vector>

#include "check.h"
#include "step_patterns.h"
#include "toolsift/step_split.h"

using namespace toolsift;
using Steps = std::vector<StepSplitter::Step>;

namespace {

StepSplitter splitter() {
  return StepSplitter({"ask", "book", "create", "download", "find", "send", "share", "summarize", "upload"},
                      {"dr", "e.g", "mr"},
                      {"and", "but", "plus", "then", "after", "afterward", "afterwards", "next", "finally", "lastly",
                       "subsequently", "additionally", "also", "well"},
                      // No word groups: every clause splitter runs on every sentence (the groups
                      // only let it skip sentences where it finds nothing).
                      StepSplitter::StageNeeds(5), 100000);
}

Steps same(const std::vector<std::string>& clauses) {
  Steps out;
  for (const auto& c : clauses) out.emplace_back(c, c);
  return out;
}

}  // namespace

TEST_CASE("StepSplitter cuts at 'and <verb>', list lines and inline numbers") {
  const StepSplitter s = splitter();
  CHECK(s.steps("Book a flight to Rome and send an email to Bob", 8) ==
        same({"Book a flight to Rome", "send an email to Bob"}));
  CHECK(s.steps("Do this:\n1. Download report.pdf\n2. Summarize it\n3. Send it to John", 8) ==
        same({"Download report.pdf", "Summarize it", "Send it to John"}));
  CHECK(s.steps("Please 1) create a folder 2) upload the photo 3) share it", 2) ==
        same({"create a folder", "upload the photo share it"}));
  CHECK(s.several("Book a flight to Rome and send an email to Bob", 8) ==
        (std::vector<std::string>{"Book a flight to Rome", "send an email to Bob"}));
}

TEST_CASE("StepSplitter keeps one step: nouns, quotations, conditionals, abbreviations") {
  const StepSplitter s = splitter();
  CHECK(s.steps("I need salt and pepper.", 8) == same({"I need salt and pepper."}));
  const std::string quoted = "Can you translate \"Hello. How are you? And then what?\" to French?";
  CHECK(s.steps(quoted, 8) == same({quoted}));
  CHECK(s.steps("If it rains, book a cab, then send a note", 8) == same({"If it rains, book a cab, then send a note"}));
  CHECK(s.steps("Ask Dr. Smith about e.g. X. Then book it.", 8) == same({"Ask Dr. Smith about e.g. X.", "book it."}));
  CHECK(s.several("I need salt and pepper.", 8).empty());
  CHECK(s.steps(" \t\x1c ", 8).empty());
}

TEST_CASE("StepSplitter joins context to the request that follows it") {
  const StepSplitter s = splitter();
  CHECK(s.steps("I am planning a trip. Book a hotel, then find a cab", 8) ==
        (Steps{{"I am planning a trip. Book a hotel", "Book a hotel"}, {"find a cab", "find a cab"}}));
}

TEST_CASE("StepSplitter::may_split: clause words, commas before verbs, marks") {
  const StepSplitter s = splitter();
  CHECK(!s.may_split("find the weather in Paris"));
  CHECK(s.may_split("x, book it"));
  CHECK(s.may_split("a\x1d" "b"));
  CHECK(s.may_split("send it AND go"));
  CHECK(!s.may_split("sandy brand"));
}

TEST_CASE("step matchers give re's matches") {
  using namespace toolsift::stepre;
  CHECK_EQ(trailing_polite("Book it for me, please thanks"), Pos{7});
  CHECK_EQ(trailing_polite("book it please!!"), Pos{7});
  CHECK_EQ(trailing_polite("please"), kFail);
  CHECK_EQ(trailing_polite("x ,thank  you?"), Pos{1});
  CHECK_EQ(trailing_polite("Book a cab for me now"), kFail);
  CHECK_EQ(polite("Hi, can you please help me to book"), Pos{4});
  CHECK_EQ(polite("I would like to book"), Pos{16});
  CHECK_EQ(polite("i am looking to x"), Pos{16});
  // Eleven marks: no match at the first (greedy {1,10} cannot reach the space), one at the second.
  CHECK_EQ(sent_end("a...........  b", 1), kFail);
  CHECK_EQ(sent_end("a...........  b", 2), Pos{14});
  CHECK_EQ(sent_end("x.\") y", 1), Pos{5});
  CHECK_EQ(seq_connective(" and then x", 0), Pos{10});
  CHECK_EQ(seq_connective(" next week x", 0), kFail);
  CHECK_EQ(seq_connective(" as well as x", 0), Pos{9});
  CHECK_EQ(seq_connective(", finally, x", 0), Pos{11});
  Span and_, word;
  CHECK_EQ(comma_word(", and x", 0, and_, word), Pos{5});
  CHECK(!and_.set());  // the path through the group failed: the group is unset, as in re
  CHECK_EQ(word.start, Pos{2});
}
