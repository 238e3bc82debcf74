"""Compare toolsift's LLM query rewrites with the MFTR authors' gpt-4o-mini rewrites.

Runs :func:`toolsift.llm.rewrite_dataset` on one mftr-* data set against the endpoint in
``TOOLSIFT_LLM_BASE_URL`` (answers come from the disk cache when the same prompts were
answered before, so a finished ``toolsift rewrite`` makes this instant), then reports:

* outcome: rewrites accepted, fallbacks to the raw query by kind (leaked value, invalid,
  malformed JSON, ...), prompt/completion tokens, seconds per call;
* need count: exact agreement with the authors' rewrite, and mean counts;
* argument roles: how many queries have roles on both sides, mean roles per query, and
  lenient role recall/precision (an authors' role counts as found when one of ours shares
  a content word of its name or description, and vice versa);
* retrieval with untrained default parameters on the authors' standardized tools
  (apibank) or rule-standardized tools: NDCG@10 of raw text, our rewrites, theirs.

Usage (a llama.cpp server from scripts/llama_server.sh, or any OpenAI-compatible one):

    scripts/llama_server.sh start && eval "$(scripts/llama_server.sh env)"
    PYTHONPATH=src python scripts/measure_llm_rewrites.py ../shared/data/mftr-apibank
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

from toolsift.evaluate import evaluate
from toolsift.evaluate.datasets import MftrDataset
from toolsift.llm import LLMClient, rewrite_dataset
from toolsift.schema import Query
from toolsift.standardize import standardize_catalog
from toolsift.toolindex import ToolIndex

_WORD = re.compile(r"[a-z]{3,}")
_STOP = {"the", "and", "for", "with", "that", "this", "from", "which", "are", "user", "users",
         "what", "its", "into", "specified", "specific", "given", "provided", "request", "requested"}


def _words(name: str, desc: str) -> set[str]:
    return set(_WORD.findall(f"{name.replace('_', ' ')} {desc}".lower())) - _STOP


def _matched(a: dict[str, str], b: dict[str, str]) -> int:
    """Roles of ``a`` sharing a content word with some role of ``b``."""
    wb = [_words(n, d) for n, d in b.items()]
    return sum(1 for n, d in a.items() if any(_words(n, d) & w for w in wb))


def _ndcg10(ds: MftrDataset, index: ToolIndex, queries: list) -> float:
    hits = index.search_batch(queries, k=10)
    run = {q.id: {h.id: float(h.score) for h in hs} for q, hs in zip(ds.queries, hits)}
    return evaluate(ds.qrels(), run, ("ndcg@10",)).mean["ndcg@10"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path)
    args = parser.parse_args()
    ds = MftrDataset.load(args.dataset)
    ours, report = rewrite_dataset(ds, LLMClient(), progress=True)
    print(report.summary())
    raw = Query.from_text
    accepted = [(o, q) for o, q in zip(ours, ds.queries) if o != raw(q.text) and q.rewritten is not None]
    print(f"accepted rewrites: {len(accepted)} / {len(ds.queries)}")
    exact = sum(len(o.needs) == len(q.rewritten.needs) for o, q in accepted)
    print(f"need count exact: {exact / max(len(accepted), 1):.3f}  "
          f"(mean needs ours {statistics.fmean(len(o.needs) for o, _ in accepted):.2f}, "
          f"theirs {statistics.fmean(len(q.rewritten.needs) for _, q in accepted):.2f})")
    both = [(dict(o.arguments), dict(q.rewritten.arguments)) for o, q in accepted]
    n_theirs = sum(len(t) for _, t in both)
    n_ours = sum(len(o) for o, _ in both)
    print(f"argument roles: ours {n_ours / max(len(both), 1):.2f}/query, theirs {n_theirs / max(len(both), 1):.2f}/query; "
          f"no-argument agreement {sum((not o) == (not t) for o, t in both) / max(len(both), 1):.3f}")
    print(f"role recall (theirs found in ours) {sum(_matched(t, o) for o, t in both) / max(n_theirs, 1):.3f}, "
          f"precision (ours found in theirs) {sum(_matched(o, t) for o, t in both) / max(n_ours, 1):.3f}")
    catalog = ds.standardized_tools or standardize_catalog(ds.raw_tools, examples=None)
    index = ToolIndex.build(catalog)
    print(f"NDCG@10, default parameters, {'authors' if ds.standardized_tools else 'rule'} docs: "
          f"raw {_ndcg10(ds, index, [q.text for q in ds.queries]):.4f}, "
          f"ours {_ndcg10(ds, index, ours):.4f}, "
          f"theirs {_ndcg10(ds, index, [q.rewritten or q.text for q in ds.queries]):.4f}")


if __name__ == "__main__":
    main()
