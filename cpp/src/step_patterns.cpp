// The step splitter's patterns as matchers (step_match.h). Each is written as the Python
// regular expression reads, element by element and in the same order, so that greedy
// repeats, alternatives and lookarounds give `re`'s match; the regex is quoted above each.
#include "step_patterns.h"

#include <vector>

namespace toolsift::stepre {

namespace {

// The character classes of the patterns (made once: a class is a 128-bit set).
constexpr OneOf kSepChars{",;:"};
constexpr OneOf kDashStar{"-*"};
constexpr OneOf kNumEnd{".)"};
constexpr OneOf kItemLetters{"abcdefghABCDEFGH"};
constexpr OneOf kAfterMark{":;,."};
constexpr OneOf kMarks{".!?;"};
constexpr OneOf kClosers{"\"')]"};
constexpr NoneOf kNotDquote{"\"\n"};
constexpr NoneOf kNotSquote{"'\n"};
constexpr NoneOf kNotClauseEnd{",.;:!?\n"};
constexpr OneOf kLetterApos{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'"};
constexpr SpaceOr kSpSep{",;:"};
constexpr SpaceOr kSpSepDot{",;:."};
constexpr SpaceOr kSpComma{","};
constexpr OneOf kGreetMark{",!."};
constexpr OneOf kEndMarks{"?.!"};

const auto kSp15 = rep(Space{}, 1, 5);   // \s{1,5}
const auto kSp05 = rep(Space{}, 0, 5);   // \s{0,5}

// (?:once|when|after|before|as\s{1,5}soon\s{1,5}as)
const auto kSubord = alt(words("once", "when", "after", "before"), seq(lit("as"), kSp15, lit("soon"), kSp15, lit("as")));

// _DONE: _SUBORD\s{1,5}(?:(?:that|this|it|these|those|they|you|we|i|everything|all\s{1,5}that)
//   (?:'s|'re|'ve|\s{1,5}(?:is|are|has|have|was|were|had|gets?|got))?(?:\s{1,5}been)?\s{1,5})?
//   (?:done|finished|complete|completed|over|ready|through)(?:\s{1,5}(?:with\s{1,5})?(?:it|that|this))?\b
const auto kDone = seq(
    kSubord, kSp15,
    opt(seq(alt(words("that", "this", "it", "these", "those", "they", "you", "we", "i", "everything"),
                seq(lit("all"), kSp15, lit("that"))),
            opt(alt(lit("'s"), lit("'re"), lit("'ve"),
                    seq(kSp15, words("is", "are", "has", "have", "was", "were", "had", "gets", "get", "got")))),
            opt(seq(kSp15, lit("been"))), kSp15)),
    words("done", "finished", "complete", "completed", "over", "ready", "through"),
    opt(seq(kSp15, opt(seq(lit("with"), kSp15)), words("it", "that", "this"))), bnd());

// (?:[,;:]\s{0,5}|\s{1,5}): how most connectives open.
const auto kSepOpen = alt(seq(one(kSepChars), kSp05), kSp15);
// (?:,\s{0,5}|\s{1,5})
const auto kCommaOpen = alt(seq(ch(','), kSp05), kSp15);

}  // namespace

// ^\s{0,20}(?:[-*•·‣▪–—]|\(?\d{1,3}[.)]|\(?[a-hA-H]\))\s{1,10}  (the non-ASCII marks never occur)
Pos bullet(Text line) {
  static const auto m = seq(rep(Space{}, 0, 20),
                            alt(one(kDashStar), seq(opt(ch('(')), rep(Digit{}, 1, 3), one(kNumEnd)),
                                seq(opt(ch('(')), one(kItemLetters), ch(')'))),
                            rep(Space{}, 1, 10));
  return match_at(m, line, 0);
}

// (?:(?<=\s)|^)\(?(\d{1,2})\)(?=\s)|(?:(?<=[:;,.]\s)|^)(\d{1,2})\.(?=\s)
Pos inline_num(Text t, Pos p, int& number) {
  Span g1, g2;
  const auto after_space = when([](Text s, Pos q) { return q == 0 || is_space(at(s, q - 1)); });
  const auto after_mark = when([](Text s, Pos q) {
    return q == 0 || (q >= 2 && is_space(at(s, q - 1)) && kAfterMark(at(s, q - 2)));
  });
  const auto space_next = when([](Text s, Pos q) { return q < size_of(s) && is_space(at(s, q)); });
  const auto m = alt(seq(after_space, opt(ch('(')), cap(g1, rep(Digit{}, 1, 2)), ch(')'), space_next),
                     seq(after_mark, cap(g2, rep(Digit{}, 1, 2)), ch('.'), space_next));
  const Pos end = match_at(m, t, p);
  if (end >= 0) {
    const Span g = g1.set() ? g1 : g2;
    number = 0;
    for (Pos i = g.start; i < g.end; ++i) number = number * 10 + (at(t, i) - '0');
  }
  return end;
}

// [.!?;]{1,10}[\"')\]]{0,3}\s{1,50}
Pos sent_end(Text t, Pos p) {
  static const auto m = seq(rep(kMarks, 1, 10), rep(kClosers, 0, 3), rep(Space{}, 1, 50));
  return match_at(m, t, p);
}

// [.!?;][\"')\]]{0,3}\s
bool punct_space(Text t) {
  static const auto m = seq(one(kMarks), rep(kClosers, 0, 3), one(Space{}));
  for (Pos p = 0; p < size_of(t); ++p) {
    if (kMarks(at(t, p)) && match_at(m, t, p) >= 0) return true;
  }
  return false;
}

// \"[^\"\n]{0,500}\"|“[^”\n]{0,500}”|(?<!\w)'[^'\n]{0,500}'(?!\w)
Pos quote_span(Text t, Pos p) {
  static const auto m =
      alt(seq(ch('"'), rep(kNotDquote, 0, 500), ch('"')),
          seq(when([](Text s, Pos q) { return !word_at(s, q - 1); }), ch('\''), rep(kNotSquote, 0, 500), ch('\''),
              when([](Text s, Pos q) { return !word_at(s, q); })));
  return match_at(m, t, p);
}

// _SEQ: (?:[,;:]\s{0,5}|\s{1,5})(?:and\s{1,5})?(?:then|after\s{1,5}that|afterwards|afterward|
//   next(?!\s{1,5}(?:week|month|year|day|time|monday|...|sunday|morning|evening|night)\b)|finally|lastly|
//   subsequently|additionally|also|as\s{1,5}well(?=\s{1,5}(?:as\s{1,5})?\w))\b,?\s{1,5}   (IGNORECASE)
Pos seq_connective(Text t, Pos p) {
  static const auto m = seq(
      kSepOpen, opt(seq(lit("and"), kSp15)),
      alt(lit("then"), seq(lit("after"), kSp15, lit("that")), words("afterwards", "afterward"),
          seq(lit("next"), not_ahead(seq(kSp15,
                                         words("week", "month", "year", "day", "time", "monday", "tuesday", "wednesday",
                                               "thursday", "friday", "saturday", "sunday", "morning", "evening",
                                               "night"),
                                         bnd()))),
          words("finally", "lastly", "subsequently", "additionally", "also"),
          seq(lit("as"), kSp15, lit("well"), ahead(seq(kSp15, opt(seq(lit("as"), kSp15)), one(WordChar{}))))),
      bnd(), opt(ch(',')), kSp15);
  return match_at(m, t, p);
}

// _THEN_CLAUSE: (?:[,;:]\s{0,5}(?:and\s{1,5})?|\s{1,5}and\s{1,5})
//   (?=_DONE|_SUBORD\b[^,.;:!?\n]{1,80},)   (IGNORECASE)
Pos then_clause(Text t, Pos p) {
  static const auto m =
      seq(alt(seq(one(kSepChars), kSp05, opt(seq(lit("and"), kSp15))), seq(kSp15, lit("and"), kSp15)),
          ahead(alt(kDone, seq(kSubord, bnd(), rep(kNotClauseEnd, 1, 80), ch(',')))));
  return match_at(m, t, p);
}

// _AND_REQUEST: (?:,\s{0,5}|\s{1,5})(?:and|but|plus)\s{1,5}(?=(?:i\s{1,5}(?:also\s{1,5})?
//   (?:want|need|would|wish)|i'd|(?:can|could|would)\s{1,5}you|please|tell\s{1,5}me|let\s{1,5}me)\b)
Pos and_request(Text t, Pos p) {
  static const auto m = seq(
      kCommaOpen, words("and", "but", "plus"), kSp15,
      ahead(seq(alt(seq(lit("i"), kSp15, opt(seq(lit("also"), kSp15)), words("want", "need", "would", "wish")),
                    lit("i'd"), seq(words("can", "could", "would"), kSp15, lit("you")), lit("please"),
                    seq(lit("tell"), kSp15, lit("me")), seq(lit("let"), kSp15, lit("me"))),
                bnd())));
  return match_at(m, t, p);
}

// _AND_WORD (case-sensitive): (?:,\s{0,5}|\s{1,5})and\s{1,5}(?:also\s{1,5})?(?:please\s{1,5})?([A-Za-z]{2,20})\b
Pos and_word(Text t, Pos p, Span& word) {
  word = {};
  const auto m = seq(kCommaOpen, exact("and"), kSp15, opt(seq(exact("also"), kSp15)), opt(seq(exact("please"), kSp15)),
                     cap(word, rep(Alpha{}, 2, 20)), bnd());
  return match_at(m, t, p);
}

// _COMMA_WORD: ,\s{1,5}(and\s{1,5})?(?:please\s{1,5})?([A-Za-z']{2,20})\b   (IGNORECASE)
Pos comma_word(Text t, Pos p, Span& and_, Span& word) {
  and_ = {};
  word = {};
  const auto m = seq(ch(','), kSp15, opt(cap(and_, seq(lit("and"), kSp15))), opt(seq(lit("please"), kSp15)),
                     cap(word, rep(kLetterApos, 2, 20)), bnd());
  return match_at(m, t, p);
}

// _CLAUSE_OPENER: (?:what|how|where|who|(?:can|could|would|will)\s{1,5}you|i\s{1,5}(?:also\s{1,5})?
//   (?:want|need|wish|would\s{1,5}like)|i'd\s{1,5}like|tell\s{1,5}me|let\s{1,5}me)\b   (IGNORECASE)
bool clause_opener(Text t, Pos p) {
  static const auto m = seq(
      alt(words("what", "how", "where", "who"), seq(words("can", "could", "would", "will"), kSp15, lit("you")),
          seq(lit("i"), kSp15, opt(seq(lit("also"), kSp15)),
              alt(words("want", "need", "wish"), seq(lit("would"), kSp15, lit("like")))),
          seq(lit("i'd"), kSp15, lit("like")), seq(lit("tell"), kSp15, lit("me")), seq(lit("let"), kSp15, lit("me"))),
      bnd());
  return match_at(m, t, p) >= 0;
}

// _SUBORD_HEAD: ^[\s,;:]{0,5}(?:(?:and|then)\s{1,5})?(?:if|when|whenever|once|after|before|unless|
//   while|although|though|because|since|as|until|whether)\b   (IGNORECASE)
bool subord_head(Text t) {
  static const auto m =
      seq(rep(kSpSep, 0, 5), opt(seq(words("and", "then"), kSp15)),
          words("if", "when", "whenever", "once", "after", "before", "unless", "while", "although", "though",
                "because", "since", "as", "until", "whether"),
          bnd());
  return match_at(m, t, 0) >= 0;
}

// _IF: \bif\b   (IGNORECASE)
bool has_if(Text t) {
  for (Pos p = 0; p + 2 <= size_of(t); ++p) {
    if (literal_at(t, p, "if", true) && boundary(t, p) && boundary(t, p + 2)) return true;
  }
  return false;
}

// _LEAD: ^[\s,;:.]{0,20}(?:(?:(?:and|then|also|additionally|next|finally|lastly|afterwards|afterward|
//   subsequently|plus|after\s{1,5}that|as\s{1,5}well(?:\s{1,5}as)?|_DONE)\b)[\s,]{0,5}){0,3}
Pos lead(Text t) {
  static const auto m = seq(
      rep(kSpSepDot, 0, 20),
      group_rep(seq(alt(words("and", "then", "also", "additionally", "next", "finally", "lastly", "afterwards",
                              "afterward", "subsequently", "plus"),
                        seq(lit("after"), kSp15, lit("that")), seq(lit("as"), kSp15, lit("well"), opt(seq(kSp15, lit("as")))),
                        kDone),
                    bnd(), rep(kSpComma, 0, 5)),
                0, 3));
  return match_at(m, t, 0);
}

// _FRONTED: ^_SUBORD\b[^,.;:!?\n]{1,80},\s{0,5}
Pos fronted(Text t) {
  static const auto m = seq(kSubord, bnd(), rep(kNotClauseEnd, 1, 80), ch(','), kSp05);
  return match_at(m, t, 0);
}

// _ORDINAL: ^(?:first(?:ly)?|to\s{1,5}(?:begin|start)(?:\s{1,5}with)?)\b[\s,]{0,5}
Pos ordinal(Text t) {
  static const auto m =
      seq(alt(seq(lit("first"), opt(lit("ly"))), seq(lit("to"), kSp15, words("begin", "start"), opt(seq(kSp15, lit("with"))))),
          bnd(), rep(kSpComma, 0, 5));
  return match_at(m, t, 0);
}

// _STEP_OPENER: ^[\s,;:.]{0,20}(?:and\s{1,5})?_DONE\b[\s,]{0,5}\S{1,40}\s{1,5}\S
bool step_opener(Text t) {
  static const auto m = seq(rep(kSpSepDot, 0, 20), opt(seq(lit("and"), kSp15)), kDone, bnd(),
                            rep(kSpComma, 0, 5), rep(NotSpace{}, 1, 40), kSp15, one(NotSpace{}));
  return match_at(m, t, 0) >= 0;
}

// lexicon._POLITE: ^(?:(?:hi|hello|hey)\b[,!.]?\s{0,5}|(?:can|could|would|will)\s{1,5}you\s{1,5}
//   (?:please\s{1,5}|kindly\s{1,5})?(?:help\s{1,5}me\s{1,5}(?:to\s{1,5})?)?|(?:please|kindly)\s{1,5}
//   (?:help\s{1,5}me\s{1,5}(?:to\s{1,5})?)?|help\s{1,5}me\s{1,5}(?:to\s{1,5})?|i(?:\s{1,5}would|'d|
//   \s{1,5}want|\s{1,5}need|\s{1,5}wish|\s{1,5}am\s{1,5}trying|'m\s{1,5}trying|\s{1,5}am\s{1,5}looking|
//   'm\s{1,5}looking|\s{1,5}have)?\s{1,5}(?:like\s{1,5}|love\s{1,5})?(?:you\s{1,5})?to\s{1,5}|
//   let(?:'s|\s{1,5}us)\s{1,5}|(?:i\s{1,5}also\s{1,5}|also\s{1,5})|(?:and|then|next|finally|afterwards|
//   additionally|lastly|first|firstly|second|secondly)\b,?\s{0,5})   (IGNORECASE)
Pos polite(Text t) {
  static const auto help_me = seq(lit("help"), kSp15, lit("me"), kSp15, opt(seq(lit("to"), kSp15)));
  static const auto m = alt(
      seq(words("hi", "hello", "hey"), bnd(), opt(one(kGreetMark)), kSp05),
      seq(words("can", "could", "would", "will"), kSp15, lit("you"), kSp15,
          opt(alt(seq(lit("please"), kSp15), seq(lit("kindly"), kSp15))), opt(help_me)),
      seq(words("please", "kindly"), kSp15, opt(help_me)), help_me,
      seq(lit("i"),
          opt(alt(seq(kSp15, lit("would")), lit("'d"), seq(kSp15, lit("want")), seq(kSp15, lit("need")),
                  seq(kSp15, lit("wish")), seq(kSp15, lit("am"), kSp15, lit("trying")), seq(lit("'m"), kSp15, lit("trying")),
                  seq(kSp15, lit("am"), kSp15, lit("looking")), seq(lit("'m"), kSp15, lit("looking")),
                  seq(kSp15, lit("have")))),
          kSp15, opt(alt(seq(lit("like"), kSp15), seq(lit("love"), kSp15))), opt(seq(lit("you"), kSp15)), lit("to"),
          kSp15),
      seq(lit("let"), alt(lit("'s"), seq(kSp15, lit("us"))), kSp15),
      alt(seq(lit("i"), kSp15, lit("also"), kSp15), seq(lit("also"), kSp15)),
      seq(words("and", "then", "next", "finally", "afterwards", "additionally", "lastly", "first", "firstly", "second",
                "secondly"),
          bnd(), opt(ch(',')), kSp05));
  return match_at(m, t, 0);
}

// lexicon._SEARCHING: ^i(?:'m|\s{1,5}am)\s{1,5}(?:searching|looking|hunting)\s{1,5}for\s{1,5}
Pos searching(Text t) {
  static const auto m = seq(lit("i"), alt(lit("'m"), seq(kSp15, lit("am"))), kSp15,
                            words("searching", "looking", "hunting"), kSp15, lit("for"), kSp15);
  return match_at(m, t, 0);
}

// lexicon._TRAILING_POLITE: (?:[\s,]{1,5}(?:for\s{1,5}me|please|thanks|thank\s{1,5}you))+\s{0,5}[?.!]*\s{0,5}$
// The group repeats without bound, so instead of backtracking: `re` cuts at the first
// position from which the rest of the text is in the pattern's language (a match must
// reach the end; `t` has no final "\n" for `$` to stop before), found right to left.
Pos trailing_polite(Text t) {
  const Pos n = size_of(t);
  // The tail \s{0,5}[?.!]*\s{0,5}: the final whitespace run, the marks before it, the
  // whitespace before them.
  Pos j2 = n;
  while (j2 > 0 && is_space(at(t, j2 - 1))) --j2;
  Pos j1 = j2;
  while (j1 > 0 && kEndMarks(at(t, j1 - 1))) --j1;
  const bool marks = j1 < j2;
  const auto tail_ok = [&](Pos i) {
    if (i >= j2) return n - i <= 10;  // whitespace only: a + b of it
    if (!marks || n - j2 > 5) return false;
    if (i >= j1) return true;
    for (Pos q = i; q < j1; ++q) {
      if (!is_space(at(t, q))) return false;
    }
    return j1 - i <= 5;
  };
  // ok[i]: the text from i is one or more groups and the tail; more[e]: tail or ok[e].
  std::vector<char> ok(static_cast<std::size_t>(n) + 1, 0);
  const auto group = seq(rep(kSpComma, 1, 5),
                         alt(seq(lit("for"), kSp15, lit("me")), lit("please"), lit("thanks"), seq(lit("thank"), kSp15, lit("you"))));
  for (Pos i = n; i >= 0; --i) {
    if (i == n || !kSpComma(at(t, i))) continue;
    ok[static_cast<std::size_t>(i)] = group(t, i, [&](Pos e) -> Pos {
      return tail_ok(e) || ok[static_cast<std::size_t>(e)] ? e : kFail;
    }) >= 0;
  }
  for (Pos i = 0; i <= n; ++i) {
    if (ok[static_cast<std::size_t>(i)]) return i;
  }
  return kFail;
}

// lexicon._REQUEST: \?|\b(?:can|could|would|will)\s{1,5}you\b|\bplease\b|\bi\s{1,5}(?:want|need|wish)\b|
//   \bi'd\s{1,5}like\b|\bi\s{1,5}would\s{1,5}like\b|\blooking\s{1,5}for\b|\bhelp\s{1,5}me\b|
//   \blet\s{1,5}me\s{1,5}know\b|\btell\s{1,5}me\b|\bi(?:'m|\s{1,5}am)\s{1,5}(?:searching|looking|trying|
//   hoping|interested)\b|^\s{0,5}(?:how|what|which|when|where|who|why|is|are|do|does|should)\b|\blet's\b
bool asks(Text t) {
  static const auto word_led = seq(
      bnd(),
      alt(seq(words("can", "could", "would", "will"), kSp15, lit("you")), lit("please"),
          seq(lit("i"), kSp15, words("want", "need", "wish")), seq(lit("i'd"), kSp15, lit("like")),
          seq(lit("i"), kSp15, lit("would"), kSp15, lit("like")), seq(lit("looking"), kSp15, lit("for")),
          seq(lit("help"), kSp15, lit("me")), seq(lit("let"), kSp15, lit("me"), kSp15, lit("know")),
          seq(lit("tell"), kSp15, lit("me")),
          seq(lit("i"), alt(lit("'m"), seq(kSp15, lit("am"))), kSp15,
              words("searching", "looking", "trying", "hoping", "interested")),
          lit("let's")),
      bnd());
  static const auto opening = seq(kSp05, words("how", "what", "which", "when", "where", "who", "why", "is", "are",
                                               "do", "does", "should"),
                                  bnd());
  if (match_at(opening, t, 0) >= 0) return true;
  // Every other alternative opens with \b and one of these pairs of characters: can, could,
  // would, will, please, i + whitespace or ', looking, let, help, tell.
  const auto may_open = [t](Pos p) {
    const char c = lower(t[static_cast<std::size_t>(p)]);
    const char d = p + 1 < size_of(t) ? lower(t[static_cast<std::size_t>(p) + 1]) : '\0';
    switch (c) {
      case 'c': return d == 'a' || d == 'o';
      case 'w': return d == 'o' || d == 'i';
      case 'p': return d == 'l';
      case 'i': return d == '\'' || is_space(static_cast<unsigned char>(d));
      case 'l': return d == 'o' || d == 'e';
      case 'h': case 't': return d == 'e';
      default: return false;
    }
  };
  for (Pos p = 0; p < size_of(t); ++p) {
    const unsigned char c = at(t, p);
    if (c == '?') return true;
    if (may_open(p) && !word_at(t, p - 1) && match_at(word_led, t, p) >= 0) {
      return true;
    }
  }
  return false;
}

// decompose.steps._SUBORD_AFTER: [,:;]\s{0,5}_SUBORD\b   (IGNORECASE)
bool subord_after(Text t) {
  static const auto m = seq(one(kSepChars), kSp05, kSubord, bnd());
  for (Pos p = 0; p < size_of(t); ++p) {
    if (kSepChars(at(t, p)) && match_at(m, t, p) >= 0) return true;
  }
  return false;
}

// _NUMBER_MARK: \d[).]
bool number_mark(Text t) {
  for (Pos p = 1; p < size_of(t); ++p) {
    if (kNumEnd(at(t, p)) && is_digit(at(t, p - 1))) return true;
  }
  return false;
}

}  // namespace toolsift::stepre
