// The step splitter's regular expressions (src/toolsift/decompose/step_patterns.py, steps.py
// and lexicon.py), one function each, with `re`'s answers on ASCII text. Each comment names
// the Python pattern; the functions take the text as `re` would see it (a slice is a view).
#pragma once

#include "step_match.h"

namespace toolsift::stepre {

// _BULLET.match(line): the end of the bullet or number opening the line, or kFail.
Pos bullet(Text line);
// _INLINE_NUM.match(text, p): the end (kFail: none) and the marker's number.
Pos inline_num(Text t, Pos p, int& number);
// _SENT_END.match(text, p).
Pos sent_end(Text t, Pos p);
// _PUNCT_SPACE.search(text) is not None.
bool punct_space(Text t);
// _QUOTE_SPAN.match(text, p) (ASCII: the two ASCII alternatives).
Pos quote_span(Text t, Pos p);

// The clause connectives, .match(text, p): _SEQ, _THEN_CLAUSE, _AND_REQUEST, _AND_WORD
// (`word`: group 1) and _COMMA_WORD (`and_`: group 1, `word`: group 2).
Pos seq_connective(Text t, Pos p);
Pos then_clause(Text t, Pos p);
Pos and_request(Text t, Pos p);
Pos and_word(Text t, Pos p, Span& word);
Pos comma_word(Text t, Pos p, Span& and_, Span& word);

// _CLAUSE_OPENER.match(text, p) is not None.
bool clause_opener(Text t, Pos p);
// _SUBORD_HEAD.match(text) is not None.
bool subord_head(Text t);
// _IF.search(text) is not None.
bool has_if(Text t);

// Anchored at the start, the end of the match (kFail: none): _LEAD (always matches),
// _FRONTED, _ORDINAL, _POLITE, _SEARCHING; _STEP_OPENER.match(text) is not None.
Pos lead(Text t);
Pos fronted(Text t);
Pos ordinal(Text t);
Pos polite(Text t);
Pos searching(Text t);
bool step_opener(Text t);
// Where _TRAILING_POLITE.sub("", text) cuts `text` (stripped at its end), or kFail.
Pos trailing_polite(Text t);

// _REQUEST.search(text) is not None (decompose.steps._asks).
bool asks(Text t);
// may_split's checks: _SUBORD_AFTER.search and _NUMBER_MARK.search.
bool subord_after(Text t);
bool number_mark(Text t);

}  // namespace toolsift::stepre
