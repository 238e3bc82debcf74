// The step splitter's stages (step_clauses.cpp) and Python's str helpers on ASCII text
// (str.strip, str.split, str.splitlines, " ".join(s.split())), shared with step_split.cpp.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "step_match.h"
#include "toolsift/step_split.h"

namespace toolsift::stepre {

// str.strip() / rstrip() (whitespace), str.strip(chars), str.lstrip(chars).
Text strip(Text s);
Text rstrip(Text s);
Text strip_chars(Text s, Text chars);
Text lstrip_chars(Text s, Text chars);
// len(s.split()), counting no further than `at_most`.
std::size_t count_words(Text s, std::size_t at_most);
// " ".join(s.split()).
std::string collapse(Text s);
// str.splitlines() (ASCII breaks: \n, \r, \r\n, \x0b, \x0c, \x1c, \x1d, \x1e).
std::vector<Text> splitlines(Text s);
// Whether `s` holds a character str.splitlines breaks at.
bool has_line_break(Text s);
// A word lower-cased into `buf` (at most 40 characters: longer is never a listed word).
Text lowered(Text word, std::string& buf);

// decompose.steps._clauses(text): the clauses of non-blank text, whitespace collapsed.
std::vector<std::string> clauses(const StepSplitter& lex, Text text);
// _words(text) is not disjoint from _VERBS.
bool has_verb(const StepSplitter& lex, Text text);

}  // namespace toolsift::stepre
