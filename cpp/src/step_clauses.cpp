// The step splitter's cuts (decompose.steps: _lines, _inline_enumeration, _sentences,
// _quoted, the clause splitters of _SPLITTERS, _clauses) and Python's str helpers, on ASCII
// text. Each function follows its Python twin statement by statement; the comments say
// only what is not visible in the Python.
#include <algorithm>
#include <string>
#include <vector>

#include "step_patterns.h"
#include "step_pipeline.h"

namespace toolsift::stepre {

// ------------------------------------------------------------------- str helpers

Text strip(Text s) {
  std::size_t a = 0, b = s.size();
  while (a < b && is_space(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && is_space(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

Text rstrip(Text s) {
  std::size_t b = s.size();
  while (b > 0 && is_space(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(0, b);
}

Text lstrip_chars(Text s, Text chars) {
  const CharSet set(chars);
  std::size_t a = 0;
  while (a < s.size() && set.has(static_cast<unsigned char>(s[a]))) ++a;
  return s.substr(a);
}

Text strip_chars(Text s, Text chars) {
  s = lstrip_chars(s, chars);
  const CharSet set(chars);
  std::size_t b = s.size();
  while (b > 0 && set.has(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(0, b);
}

std::size_t count_words(Text s, std::size_t at_most) {
  std::size_t n = 0;
  bool in_word = false;
  for (const char c : s) {
    const bool sp = is_space(static_cast<unsigned char>(c));
    if (!sp && !in_word && ++n >= at_most) return n;
    in_word = !sp;
  }
  return n;
}

std::string collapse(Text s) {
  std::string out;
  out.reserve(s.size());
  bool in_word = false;
  for (const char c : s) {
    if (is_space(static_cast<unsigned char>(c))) {
      in_word = false;
      continue;
    }
    if (!in_word && !out.empty()) out.push_back(' ');
    out.push_back(c);
    in_word = true;
  }
  return out;
}

namespace {
bool breaks_line(char c) { return c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c' || (c >= '\x1c' && c <= '\x1e'); }
bool ends_with_colon(Text s) {
  s = rstrip(s);
  return !s.empty() && s.back() == ':';
}
Text last(Text s, std::size_t n) { return s.size() > n ? s.substr(s.size() - n) : s; }
}  // namespace

std::vector<Text> splitlines(Text s) {
  std::vector<Text> out;
  std::size_t start = 0, i = 0;
  while (i < s.size()) {
    if (!breaks_line(s[i])) {
      ++i;
      continue;
    }
    out.push_back(s.substr(start, i - start));
    i += (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ? 2 : 1;
    start = i;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

bool has_line_break(Text s) { return std::any_of(s.begin(), s.end(), breaks_line); }

Text lowered(Text word, std::string& buf) {
  buf.assign(word.substr(0, 41));
  for (char& c : buf) c = lower(c);
  return buf;
}

bool has_verb(const StepSplitter& lex, Text text) {
  // _WORD.findall: runs of [A-Za-z'], cut every 40 characters.
  std::string buf;
  const Pos n = size_of(text);
  Pos p = 0;
  while (p < n) {
    const auto word = [](unsigned char c) { return is_alpha(c) || c == '\''; };
    if (!word(at(text, p))) {
      ++p;
      continue;
    }
    Pos e = p;
    while (e < n && e - p < 40 && word(at(text, e))) ++e;
    if (lex.is_verb(lowered(text.substr(static_cast<std::size_t>(p), static_cast<std::size_t>(e - p)), buf))) {
      return true;
    }
    p = e;
  }
  return false;
}

// ------------------------------------------------------------------- the cuts

namespace {

using Spans = std::vector<std::pair<Pos, Pos>>;
constexpr OneOf kSepOnly{",;:"};

// _quoted: the quoted spans (finditer of _QUOTE_SPAN, whose matches open with " or ').
Spans quoted(Text t) {
  Spans out;
  Pos end = 0;
  for (Pos p = 0; p < size_of(t); ++p) {
    if (p < end || (t[static_cast<std::size_t>(p)] != '"' && t[static_cast<std::size_t>(p)] != '\'')) continue;
    const Pos e = quote_span(t, p);
    if (e >= 0) {
      out.emplace_back(p, e);
      end = e;
    }
  }
  return out;
}

// The quoted spans of one text, found when a check first needs them.
class Quotes {
 public:
  explicit Quotes(Text t) : t_(t) {}
  bool inside(Pos pos) {
    if (!found_) {
      spans_ = quoted(t_);
      found_ = true;
    }
    return std::any_of(spans_.begin(), spans_.end(), [pos](const auto& s) { return s.first < pos && pos < s.second; });
  }

 private:
  Text t_;
  Spans spans_;
  bool found_ = false;
};

void keep_nonblank(Text piece, std::vector<Text>& out) {
  if (!strip(piece).empty()) out.push_back(piece);
}

// _lines: false when the text is one block (itself), else true with the blocks in `out`.
bool lines(Text text, std::vector<std::string>& out) {
  if (!has_line_break(text)) return false;  // one line
  const std::vector<Text> raw = splitlines(text);
  if (raw.size() < 2 || std::count_if(raw.begin(), raw.end(), [](Text ln) { return bullet(ln) >= 0; }) < 2) {
    return false;
  }
  std::vector<Text> prose;
  const auto flush = [&] {
    std::string joined;
    for (const Text p : prose) joined.append(joined.empty() ? "" : " ").append(p);
    out.push_back(std::move(joined));
    prose.clear();
  };
  for (const Text ln : raw) {
    const Pos mark = bullet(ln);
    if (mark >= 0) {
      if (!prose.empty()) flush();
      out.emplace_back(ln.substr(static_cast<std::size_t>(mark)));
    } else if (!strip(ln).empty()) {
      if (!out.empty() && prose.empty() && is_space(static_cast<unsigned char>(ln[0]))) {
        out.back().append(" ").append(strip(ln));  // an indented continuation of the previous item
      } else {
        prose.push_back(strip(ln));
      }
    }
  }
  if (!prose.empty()) flush();
  // A lead-in such as "Please do the following:" asks for nothing by itself.
  out.erase(std::remove_if(out.begin(), out.end(), [](const std::string& s) { return strip(s).empty() || ends_with_colon(s); }),
            out.end());
  return !out.empty();
}

std::vector<Text> inline_enumeration(Text text) {
  const auto has = [text](const char* a, const char* b) { return text.find(a) != Text::npos || text.find(b) != Text::npos; };
  if (!(has("1)", "1.") && has("2)", "2."))) return {text};
  std::vector<std::pair<Pos, Pos>> cuts;
  int expected = 1;
  for (Pos p = 0; p <= size_of(text);) {
    int number = 0;
    const unsigned char c = p < size_of(text) ? at(text, p) : 0;
    const Pos e = c == '(' || is_digit(c) ? inline_num(text, p, number) : kFail;
    if (e < 0) {
      ++p;
      continue;
    }
    if (number == expected) {
      cuts.emplace_back(p, e);
      ++expected;
    }
    p = e;
  }
  if (cuts.size() < 2) return {text};
  const Text lead = text.substr(0, static_cast<std::size_t>(cuts[0].first));
  std::vector<Text> parts;
  if (count_words(lead.substr(0, 100), 2) >= 2) parts.push_back(lead);
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    const Pos end = cuts[i].second, next = i + 1 < cuts.size() ? cuts[i + 1].first : size_of(text);
    parts.push_back(text.substr(static_cast<std::size_t>(end), static_cast<std::size_t>(next - end)));
  }
  std::vector<Text> kept;
  for (const Text p : parts) {
    if (!strip(p).empty() && !ends_with_colon(p)) kept.push_back(p);
  }
  return kept;
}

constexpr OneOf kMarks{".!?;"};  // what every _SENT_END match opens with

std::vector<Text> sentences(const StepSplitter& lex, Text text) {
  std::vector<Text> out;
  if (!punct_space(text)) {
    keep_nonblank(text, out);
    return out;
  }
  const Pos n = size_of(text);
  Pos start = 0, end = 0;
  Quotes quotes(text);
  std::string buf;
  for (Pos p = 0; p < n; ++p) {
    if (p < end || !kMarks(at(text, p))) continue;
    const Pos e = sent_end(text, p);
    if (e < 0) continue;
    end = e;
    if (e >= n) break;
    if (text[static_cast<std::size_t>(p)] == '.') {
      const Pos from = std::max(start, p - 12);
      Text window = rstrip(text.substr(static_cast<std::size_t>(from), static_cast<std::size_t>(p - from)));
      std::size_t k = window.size();
      while (k > 0 && !is_space(static_cast<unsigned char>(window[k - 1]))) --k;
      const Text token = lstrip_chars(lowered(window.substr(k), buf), "(\"'");
      // "D.C.", "e.g.", "Dr." and single initials do not end a sentence; nor does a period
      // followed by a lower-case word.
      const unsigned char next = at(text, e);
      if (lex.is_abbrev(token) || token.size() == 1 || (!(next >= 'A' && next <= 'Z') && !is_digit(next))) continue;
    }
    if (quotes.inside(p)) continue;
    out.push_back(text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(p + 1 - start)));
    start = e;
  }
  out.push_back(text.substr(static_cast<std::size_t>(start)));
  std::vector<Text> kept;
  for (const Text s : out) keep_nonblank(s, kept);
  return kept;
}

enum class Connective { kSeq, kThenClause, kAndRequest };

// Whether a match opening at `p` (with ",", ";", ":" or whitespace) can reach a word that
// opens with one of `first`: the opening (one [,;:] and/or whitespace) ends where the next
// element, a word, must start; a shorter opening would leave whitespace there.
bool word_follows(Text t, Pos p, const OneOf& first) {
  if (kSepOnly(at(t, p))) ++p;
  while (p < size_of(t) && is_space(at(t, p))) ++p;
  return p < size_of(t) && first(at(t, p));
}

void split_at(const StepSplitter&, Text text, Connective kind, std::vector<Text>& out) {
  Pos start = 0;
  Quotes quotes(text);
  static constexpr SpaceOr opens{",;:"};  // what every match of the three patterns opens with
  // The first letters of the words after the opening ("and", the connectives, "but" ...).
  static constexpr OneOf seq_first{"atnflsATNFLS"}, then_first{"aowbAOWB"}, request_first{"abpABP"};
  const OneOf& first = kind == Connective::kSeq ? seq_first : kind == Connective::kThenClause ? then_first : request_first;
  for (Pos p = 0; p <= size_of(text);) {
    if (p == size_of(text) || !opens(at(text, p)) || !word_follows(text, p, first)) {
      ++p;
      continue;
    }
    const Pos e = kind == Connective::kSeq ? seq_connective(text, p)
                  : kind == Connective::kThenClause ? then_clause(text, p)
                                                    : and_request(text, p);
    if (e < 0) {
      ++p;
      continue;
    }
    const Text head = text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(p - start));
    const Text opening = lstrip_chars(text.substr(static_cast<std::size_t>(p), static_cast<std::size_t>(e - p)), " ,;:");
    const bool conditional = kind == Connective::kSeq && literal_at(opening, 0, "then", true) && has_if(last(head, 500));
    if (!conditional && count_words(head.substr(0, 200), 2) >= 2 && !quotes.inside(p)) {
      keep_nonblank(head, out);
      start = p;
    }
    p = e;
  }
  keep_nonblank(text.substr(static_cast<std::size_t>(start)), out);
}

void split_and_verbs(const StepSplitter& lex, Text text, std::vector<Text>& out) {
  Pos start = 0;
  Quotes quotes(text);
  std::string buf;
  static constexpr SpaceOr opens{","};
  static constexpr OneOf and_first{"a"};
  for (Pos p = 0; p <= size_of(text);) {
    Span verb;
    const Pos e = p < size_of(text) && opens(at(text, p)) && word_follows(text, p, and_first) ? and_word(text, p, verb)
                                                                                                : kFail;
    if (e < 0) {
      ++p;
      continue;
    }
    const Pos at_p = p;
    p = e;
    const auto word = text.substr(static_cast<std::size_t>(verb.start), static_cast<std::size_t>(verb.end - verb.start));
    if (!lex.is_verb(lowered(word, buf))) continue;
    const Text head = text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(at_p - start));
    const Text tail = text.substr(static_cast<std::size_t>(verb.start), 200);
    const Text window = last(head, 500);
    if (count_words(head.substr(0, 200), 2) < 2 || count_words(tail, 2) < 2) continue;
    if (quotes.inside(at_p)) continue;
    if (!has_verb(lex, window) && !asks(window)) continue;
    keep_nonblank(head, out);
    start = at_p;
  }
  keep_nonblank(text.substr(static_cast<std::size_t>(start)), out);
}

void split_comma_clauses(const StepSplitter& lex, Text text, std::vector<Text>& out) {
  Pos start = 0;
  Quotes quotes(text);
  std::string buf;
  for (Pos p = 0; p <= size_of(text);) {
    Span and_, word;
    const Pos e = p < size_of(text) && text[static_cast<std::size_t>(p)] == ',' ? comma_word(text, p, and_, word) : kFail;
    if (e < 0) {
      ++p;
      continue;
    }
    const Pos at_p = p;
    p = e;
    const Text tail = text.substr(static_cast<std::size_t>(word.start), 200);
    const auto w = tail.substr(0, static_cast<std::size_t>(word.end - word.start));
    if (!clause_opener(tail.substr(0, 40), 0) && (and_.set() || !lex.is_verb(lowered(w, buf)))) continue;
    const Text head = text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(at_p - start));
    const Text window = last(lstrip_chars(head, " ,;:"), 500);
    if (count_words(head.substr(0, 200), 3) < 3 || count_words(tail, 2) < 2 || subord_head(head.substr(0, 40))) continue;
    if (quotes.inside(at_p)) continue;
    if (!has_verb(lex, window) && !asks(window)) continue;
    keep_nonblank(head, out);
    start = at_p;
  }
  keep_nonblank(text.substr(static_cast<std::size_t>(start)), out);
}

std::vector<Text> clause_splits(const StepSplitter& lex, Text sentence) {
  std::vector<Text> out;
  if (strip(sentence).empty()) return out;
  out.push_back(sentence);
  std::string low(sentence);
  for (char& c : low) c = lower(c);
  // A sentence without a word of each of a stage's groups has no match in any piece: the
  // stage would give every piece back as it is.
  const unsigned run = lex.stages_to_run(low);
  std::vector<Text> next;
  for (int stage = 0; stage < 5; ++stage) {
    if (!(run & (1U << stage))) continue;
    next.clear();
    for (const Text s : out) {
      switch (stage) {
        case 0: split_at(lex, s, Connective::kSeq, next); break;
        case 1: split_at(lex, s, Connective::kThenClause, next); break;
        case 2: split_at(lex, s, Connective::kAndRequest, next); break;
        case 3: split_and_verbs(lex, s, next); break;
        default: split_comma_clauses(lex, s, next); break;
      }
    }
    out.swap(next);
  }
  return out;
}

}  // namespace

std::vector<std::string> clauses(const StepSplitter& lex, Text text) {
  std::vector<std::string> out, owned;
  std::vector<Text> blocks;
  if (lines(text, owned)) {
    blocks.assign(owned.begin(), owned.end());
  } else {
    blocks.push_back(text);
  }
  for (const Text block : blocks) {
    for (const Text part : inline_enumeration(block)) {
      for (const Text sent : sentences(lex, part)) {
        for (const Text c : clause_splits(lex, sent)) {
          const Text clause = strip_chars(c, " \t\r\n,;:");
          if (!strip_chars(clause, " \t\r\n,;:.").empty()) out.push_back(collapse(clause));
        }
      }
    }
  }
  return out;
}

}  // namespace toolsift::stepre
