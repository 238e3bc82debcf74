// The rule-based request step splitter (src/toolsift/decompose/steps.py) on ASCII text:
// the same steps, bit for bit, as the Python implementation, which stays the reference
// and handles every other text.
//
// A request is cut at bulleted or numbered lines, inline enumerations ("1) ... 2) ..."),
// sentence ends and clause connectives ("and then", ", and can you", "and <verb>", a comma
// before a verb or a question); clauses that ask for nothing join the next request as its
// context. Every pattern is a bounded matcher (step_match.h): linear in the text's length.
//
// The word lists (request verbs, abbreviations, clause words) are the Python module's,
// handed over at construction: one definition. Thread-safe after construction (const).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace toolsift {

class StepSplitter {
 public:
  // A step: its full text (context included) and its request clause alone.
  using Step = std::pair<std::string, std::string>;

  // Per clause splitter, groups of words every match holds one word of each of.
  using StageNeeds = std::vector<std::vector<std::vector<std::string>>>;

  // verbs: lexicon._VERBS; abbrev: step_patterns._ABBREV; clause_words: steps._CLAUSE_WORDS;
  // stage_needs: the word groups of steps._SPLITTERS, five entries (all lower case);
  // max_chars: schema.MAX_TEXT_CHARS (a text is cut there first).
  StepSplitter(std::vector<std::string> verbs, std::vector<std::string> abbrev, std::vector<std::string> clause_words,
               StageNeeds stage_needs, std::size_t max_chars);

  // Whether every byte is ASCII (the only texts the methods below take).
  static bool is_ascii(std::string_view text);

  // decompose.steps._steps(text, max_steps): the (full text, request clause) pairs.
  std::vector<Step> steps(std::string_view text, long max_steps) const;
  // several_steps(text, max_steps): the steps' full texts when two or more, else empty.
  std::vector<std::string> several(std::string_view text, long max_steps) const;
  // may_split(text) (on the whole text, as in Python: not cut at max_chars).
  bool may_split(std::string_view text) const;
  // needs._steps_of: several(text) when may_split(text), else empty.
  std::vector<std::string> search_steps(std::string_view text, long max_steps) const;

  // The word lists, for the pipeline (step_split.cpp, step_clauses.cpp).
  bool is_verb(std::string_view lower_word) const;
  bool is_abbrev(std::string_view lower_word) const;
  bool is_clause_word(std::string_view lower_word) const;
  // The clause splitters (bit i: stage i, 0-4) whose every word group has a word in a
  // sentence (`low`: lower-cased); the others find nothing in it.
  unsigned stages_to_run(std::string_view low) const;

 private:
  std::vector<std::string> verbs_, abbrev_, clause_words_;  // sorted, distinct
  // The stages' words, each once, by first character (the first 64), and the stages'
  // groups as indices into need_words_.
  std::vector<std::string> need_words_;
  std::array<std::vector<std::uint8_t>, 128> by_first_;
  std::vector<std::vector<std::vector<std::size_t>>> stage_groups_;
  std::size_t max_chars_;
};

}  // namespace toolsift
