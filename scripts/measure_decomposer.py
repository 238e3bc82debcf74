"""Compare the rule-based decomposer with the MFTR authors' LLM rewrites.

For each mftr-* data set under ``../shared/data`` (or ``--data``):

* need count: exact agreement rate and mean absolute difference;
* argument roles: recall (share of the LLM's roles matched by one of ours) and
  precision (share of ours matching one of the LLM's), micro-averaged over queries that
  have roles on the respective side;
* retrieval: NDCG@10 of the default ``ToolIndex`` (BM25, ``IndexConfig()``'s shipped weights)
  over the raw tools with (a) the raw text, (b) ``decompose(text)``, (c) the LLM rewrite
  (raw text where a query has no rewrite).

Role matching rule (lenient, documented in docs/decompose.md): each of our roles has a
keyword set (its own name tokens plus a few synonyms, :data:`SYNONYMS`). An LLM role
matches one of ours when that keyword set meets the LLM role's tokens -- its name split
at ``_`` plus the words of its description ("name+desc"); the strict variant uses the
name tokens only ("name").

Usage: ``PYTHONPATH=src python scripts/measure_decomposer.py [--data ../shared/data]``
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

from toolsift.decompose import decompose
from toolsift.evaluate import evaluate
from toolsift.evaluate.datasets import MftrDataset
from toolsift.toolindex import ToolIndex

DATASETS = ("apibank", "apigen", "gorilla-huggingface", "toolink")

#: Extra keywords of our roles, beyond the tokens of the role name itself.
SYNONYMS: dict[str, set[str]] = {
    "email_address": {"email", "mail", "recipient", "sender"},
    "url": {"url", "link", "website", "webpage", "domain", "uri", "endpoint"},
    "file_name": {"file", "filename", "path", "document"},
    "file_format": {"format", "extension", "type"},
    "phone_number": {"phone", "telephone", "mobile"},
    "amount": {"amount", "price", "cost", "money", "value", "principal", "salary", "budget", "payment"},
    "currency": {"currency", "currencies", "coin", "symbol"},
    "percentage": {"rate", "percent", "percentage", "interest", "ratio"},
    "date": {"date", "day", "dates", "birthday", "deadline", "start", "end", "year", "month"},
    "time": {"time", "hour", "clock", "datetime", "timestamp"},
    "temperature": {"temperature", "celsius", "fahrenheit", "degrees"},
    "distance": {"distance", "length", "height", "width", "radius", "size"},
    "weight": {"weight", "mass"},
    "duration": {"duration", "years", "period", "months", "days", "hours", "minutes", "seconds", "time"},
    "volume": {"volume", "capacity"},
    "data_size": {"size", "bytes"},
    "identifier": {"id", "identifier", "number"},
    "code": {"code", "id", "identifier", "symbol"},
    "person_name": {"name", "person", "patient", "doctor", "user", "contact", "player", "author"},
    "recipient": {"recipient", "to", "receiver", "name", "person"},
    "location": {"location", "city", "place", "country", "region", "address", "area", "state"},
    "origin": {"origin", "source", "from", "departure", "location", "city"},
    "destination": {"destination", "to", "arrival", "location", "city"},
    "target_language": {"language", "target", "lang"},
    "source_language": {"language", "source", "lang"},
    "language": {"language", "lang"},
    "quoted_text": {"text", "string", "content", "message", "query", "sentence", "input", "prompt"},
    "number": {"number", "num", "nums", "n", "integer", "value", "count", "numbers", "x", "y", "a", "b"},
    "text": {"text", "content", "sentence", "document", "input", "context", "passage", "string", "prompt"},
    "image": {"image", "img", "photo", "picture"},
    "audio": {"audio", "sound", "speech", "voice", "recording"},
    "video": {"video"},
    "question": {"question", "query"},
    "username": {"username", "user", "account", "login"},
    "password": {"password"},
    "zip_code": {"zip", "postal", "postcode"},
    "address": {"address", "street"},
    "query": {"query", "keyword", "keywords", "search", "term", "q"},
    "symbol": {"symbol", "ticker", "stock"},
    "year": {"year"},
    "category": {"category", "genre", "type"},
    "ip_address": {"ip"},
    "domain": {"domain"},
    "token": {"token", "key", "auth"},
}
_TOKEN = re.compile(r"[a-z0-9]+")


def _keywords(role: str) -> set[str]:
    return set(role.split("_")) | SYNONYMS.get(role, set()) | (
        SYNONYMS.get(role.rsplit("_", 1)[0], set()) if role.endswith("_id") else set())


def _llm_tokens(role: str, desc: str, with_desc: bool) -> set[str]:
    toks = set(_TOKEN.findall(role.lower().replace("_", " ")))
    if with_desc:
        toks |= set(_TOKEN.findall(desc.lower()))
    return toks


def role_stats(ours: dict[str, str], llm: dict[str, str], with_desc: bool) -> tuple[int, int]:
    """(LLM roles matched by one of ours, our roles matching one of the LLM's)."""
    kw = {o: _keywords(o) for o in ours}
    toks = {r: _llm_tokens(r, d, with_desc) for r, d in llm.items()}
    recall_hits = sum(1 for r in llm if any(kw[o] & toks[r] for o in ours))
    precision_hits = sum(1 for o in ours if any(kw[o] & toks[r] for r in llm))
    return recall_hits, precision_hits


def ndcg10(ds: MftrDataset, index: ToolIndex, queries: list) -> float:
    hits = index.search_batch(queries, k=10)
    run = {q.id: {h.id: float(h.score) for h in hs} for q, hs in zip(ds.queries, hits)}
    return evaluate(ds.qrels(), run, ("ndcg@10",)).mean["ndcg@10"]


def measure(path: Path) -> dict[str, float]:
    ds = MftrDataset.load(path)
    t0 = time.perf_counter()
    ours = [decompose(q.text) for q in ds.queries]
    ms = (time.perf_counter() - t0) * 1000 / len(ds.queries)
    pairs = [(o, q.rewritten) for o, q in zip(ours, ds.queries) if q.rewritten is not None]
    diffs = [len(o.needs) - len(r.needs) for o, r in pairs]
    out = {
        "queries": len(ds.queries), "ms/query": ms,
        "needs_exact": sum(d == 0 for d in diffs) / len(diffs),
        "needs_mad": statistics.fmean(abs(d) for d in diffs),
        "needs_ours": statistics.fmean(len(o.needs) for o, _ in pairs),
        "needs_llm": statistics.fmean(len(r.needs) for _, r in pairs),
    }
    for label, with_desc in (("name", False), ("name+desc", True)):
        rec = prec = n_llm = n_ours = 0
        for o, r in pairs:
            a, b = role_stats(dict(o.arguments), dict(r.arguments), with_desc)
            rec, prec = rec + a, prec + b
            n_llm, n_ours = n_llm + len(r.arguments), n_ours + len(o.arguments)
        out[f"recall({label})"] = rec / max(n_llm, 1)
        out[f"precision({label})"] = prec / max(n_ours, 1)
    index = ToolIndex.build(ds.raw_tools)
    out["ndcg@10 raw"] = ndcg10(ds, index, [q.text for q in ds.queries])
    out["ndcg@10 rules"] = ndcg10(ds, index, ours)
    out["ndcg@10 rules-noargs"] = ndcg10(ds, index, [decompose(q.text, arguments=False) for q in ds.queries])
    out["ndcg@10 llm"] = ndcg10(ds, index, [q.rewritten or q.text for q in ds.queries])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    rows = {name: measure(args.data / f"mftr-{name}") for name in DATASETS}
    cols = list(next(iter(rows.values())))
    width = max(len(c) for c in cols) + 2
    print("metric".ljust(width) + "".join(n[:12].rjust(14) for n in rows))
    for c in cols:
        vals = [rows[n][c] for n in rows]
        print(c.ljust(width) + "".join((f"{v:14d}" if isinstance(v, int) else f"{v:14.3f}") for v in vals))


if __name__ == "__main__":
    main()
