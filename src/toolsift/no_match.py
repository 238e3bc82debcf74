"""What toolsift says when no tool matches a query: the texts the command line prints and
``find_tools`` returns. Plain strings in a module of their own, so printing one loads
neither the structured query's pydantic models (:mod:`toolsift.query_schema`, which
re-exports them) nor the search path."""

from __future__ import annotations

__all__ = ["NO_MATCH_HINT", "NO_MATCH_HINT_DENSE", "NO_MATCH_NOTE"]

#: Said when no tool shares a word with a query (every hit has ``matched=False``; the
#: library reports it through that attribute rather than a warning per query).
NO_MATCH_HINT = ("no tool matches any word of this query: the BM25 retriever matches words, not meanings. "
                 "The hybrid preset (the default; this index was built with BM25 alone) also matches by "
                 "meaning: build the index without --preset bm25 (preset=\"bm25\").")

#: The same, as the note ``find_tools`` returns to a model when nothing matched.
NO_MATCH_NOTE = ("No tool matched the query: none shares a word with it, and on a hybrid or dense index none "
                 "is closer in meaning than random text gets. Rephrase it with the words a tool's description "
                 "would use (e.g. 'send email' rather than 'let my boss know'), or drop tag filters.")

#: What ``toolsift search`` prints when nothing matched on an index with dense fields
#: (a dense candidate matches only above its field's null floor, search/evidence.py).
NO_MATCH_HINT_DENSE = ("no tool matches any word of this query, and none is closer in meaning than random "
                       "text gets: rephrase it with the words a tool's description would use.")
