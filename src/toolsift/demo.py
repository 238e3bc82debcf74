"""``toolsift demo``: index the bundled catalogue with the default preset (hybrid), run
example queries, and show a match the dense half finds that BM25 alone misses.

The semantic example is computed, not written down: each candidate request below is
searched on the demo index and on a BM25-only index of the same catalogue
(``preset="bm25"``), and the demo prints the one whose intended tool gains the most
ranks, with both ranks. If no candidate gains (another model, an edited catalogue), it
says so.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

__all__ = ["DEMO_QUERIES", "SEMANTIC_CANDIDATES", "run_demo", "semantic_match"]

DEMO_QUERIES: tuple[Any, ...] = (
    "email the quarterly report to my manager",
    "will it rain in Lisbon tomorrow?",
    "refund the last payment from customer 4411",
    "open a bug about the login page crashing",
    {
        "tool_needs": [
            {
                "user_intent": "Book a meeting with the design team next Tuesday at 10am",
                "tool_description": "Create a calendar event with attendees at a given date and time",
                "expected_response": "The created event with its id and start time",
            }
        ],
        "extracted_arguments": {
            "title": "short name of the meeting",
            "start_time": "date and time the meeting starts",
            "attendees": "email addresses of the people invited",
        },
        "request": "set up a meeting with the design team next Tuesday at 10am",
    },
)

#: Requests worded unlike their tool's text, with the tool they mean (demo catalogue ids).
SEMANTIC_CANDIDATES: tuple[tuple[str, str], ...] = (
    ("snap a photo of the porch", "get_camera_snapshot"),
    ("keep a copy of the prod db before the migration", "backup_database"),
    ("how much cash is in my checking", "get_account_balance"),
)


def _rank(index: Any, query: str, tool_id: str) -> int | None:
    """1-based rank of ``tool_id`` among the matched hits of ``query``, or None."""
    for hit in index.search(query, k=len(index.catalog)):
        if hit.id == tool_id:
            return hit.rank if hit.matched else None
    return None


def semantic_match(index: Any, lexical: Any,
                   candidates: tuple[tuple[str, str], ...] = SEMANTIC_CANDIDATES) -> dict[str, Any] | None:
    """The candidate whose tool ``index`` ranks best against ``lexical`` (a BM25-only
    index of the same catalogue): ``{"query", "tool", "rank", "bm25_rank"}`` (a rank is
    None when the tool is not matched at all), or None when no candidate ranks better
    on ``index``."""
    best, best_gain = None, 0
    for query, tool in candidates:
        mine, theirs = _rank(index, query, tool), _rank(lexical, query, tool)
        if mine is None:
            continue
        gain = (len(index.catalog) + 1 if theirs is None else theirs) - mine
        if gain > best_gain:
            best, best_gain = {"query": query, "tool": tool, "rank": mine, "bm25_rank": theirs}, gain
    return best


def _describe(config: Any) -> str:
    dense = [f for f, r in config.retrievers if r != "bm25"]
    if not dense:
        return "BM25 on every field"
    model = "static-table" if config.encoder == "static" else "MiniLM"
    queries = "the static table" if config.query_encoder == "static" or config.encoder == "static" else "MiniLM"
    return f"BM25 + {model} document vectors on {', '.join(dense)}; queries embedded by {queries}"


def run_demo(args: argparse.Namespace, out: TextIO) -> int:
    """The ``demo`` command (``args``: ``query``, ``k``, ``json``)."""
    from .adapters import demo_catalog_path, load_catalog
    from .hits_table import print_hits as _print_hits
    from .hits_table import query_params as _query_params
    from .presets import default_preset
    from .toolindex import ToolIndex

    catalog = load_catalog(demo_catalog_path())
    t0 = time.perf_counter()
    built = ToolIndex.build(catalog)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toolsift-demo-") as tmp:
        built.save(Path(tmp) / "index")
        index = ToolIndex.load(Path(tmp) / "index")
        queries = args.query or list(DEMO_QUERIES)
        results = []
        for q in queries:
            s = time.perf_counter()
            hits = index.search(q, k=args.k, explain=True)
            results.append((q, hits, (time.perf_counter() - s) * 1e3))
        semantic = None
        if not args.query and index.config.uses_dense:
            semantic = semantic_match(index, ToolIndex.build(catalog, preset="bm25"))
    if args.json:
        json.dump([{"query": q, "ms": round(ms, 3), "hits": [h.to_dict() for h in hits]}
                   for q, hits, ms in results], out, indent=2)
        out.write("\n")
        return 0
    print(f"toolsift demo: {len(catalog)} tools from {demo_catalog_path().name}, "
          f"indexed in {(t1 - t0) * 1e3:.1f} ms, saved and reloaded (memory-mapped)", file=out)
    print(f'index: preset "{default_preset()}" (the default): {_describe(index.config)}; '
          f'preset="bm25" (--preset bm25) for BM25 alone', file=out)
    for q, hits, ms in results:
        _print_hits(q, hits, ms, out, _query_params(index, q), dense=index.config.uses_dense)
    print("\nfields: desc=description param=parameters resp=response exmp=examples pen=missing-parameter penalty;"
          " - = weight 0 for this query (not part of its score)", file=out)
    if semantic is not None:
        theirs = "not matched at all" if semantic["bm25_rank"] is None else f"rank {semantic['bm25_rank']}"
        print(f"\nsemantic match: {semantic['query']!r} -> {semantic['tool']}: rank {semantic['rank']} "
              f"in this index, {theirs} by BM25 alone (preset=\"bm25\", same catalogue)", file=out)
    elif not args.query and index.config.uses_dense:
        print("\nsemantic match: none of the demo's paraphrased requests ranks its tool higher than BM25 "
              "alone here", file=out)
    return 0
