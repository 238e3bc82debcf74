// QueryWords: the ASCII split of toolsift.analyze's TOKEN_PATTERN, and the per-word memo.
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"
#include "toolsift/query_words.h"

using namespace toolsift;

TEST_CASE("QueryWords splits runs of two or more word characters") {
  const std::string text = "Send_Email to a bob@x.io, 42 times!\tI-O x9 __";
  std::vector<std::string> words;
  QueryWords::split(text.data(), text.size(), true, words);
  CHECK(words == (std::vector<std::string>{"send_email", "to", "bob", "io", "42", "times", "x9", "__"}));
  words.clear();
  QueryWords::split(text.data(), text.size(), false, words);
  CHECK_EQ(words[0], std::string("Send_Email"));
}

TEST_CASE("QueryWords reports untaught words, then maps taught ones in order") {
  QueryWords qw(true, 4);
  const std::string text = "Send the mail, send it";
  std::vector<int32_t> ids;
  std::vector<std::string> unknown;
  CHECK(!qw.terms(text.data(), text.size(), ids, unknown));
  CHECK(unknown == (std::vector<std::string>{"send", "the", "mail", "it"}));
  const int32_t send[1] = {7}, mail[2] = {3, -1};
  qw.learn("send", send, 1);
  qw.learn("the", nullptr, 0);  // a stop word: no term
  qw.learn("mail", mail, 2);
  qw.learn("it", nullptr, 0);
  ids.clear();
  unknown.clear();
  CHECK(qw.terms(text.data(), text.size(), ids, unknown));
  CHECK(ids == (std::vector<int32_t>{7, 3, -1, 7}));
  // Past its capacity the memo starts over.
  qw.learn("more", send, 1);
  ids.clear();
  CHECK(!qw.terms(text.data(), text.size(), ids, unknown));
  CHECK_THROWS(qw.learn("x", mail, 3), std::invalid_argument, "at most 2");
}
