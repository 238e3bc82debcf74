"""BM25 top-n per text and search latency on a saved large index (docs/results/scale-1M-2026-11-28e.md).

Loads a saved index (e.g. bench_scale's 1M default catalogue, built once with
``ToolIndex.build(synthetic_tools(1_000_000, seed=0))`` and saved), runs bench_scale's raw
queries once through ``ToolIndex.search`` while recording the description and parameters
texts the engine's fused call receives, then times ``InvertedIndex.topk`` over those texts
(``--rounds`` rounds, thread CPU per text, the search's own n and scale, one thread) and
the raw queries' ``ToolIndex.search`` (40 warm-ups, then p50 wall and CPU a query). Prints
one JSON line, with a digest of the top-n ids and scores so two builds of the core can be
checked for identical answers. Compare two cores by running it alternately with each on
``PYTHONPATH``::

    PYTHONPATH=src python scripts/maxscore_1m.py INDEX --label after
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FIELDS = ("description", "parameters")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--label", default="")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from benchmarks.bench_scale import _queries
    import toolsift.search.fused_hybrid as fh
    from toolsift import ToolIndex

    raw, structured = _queries()
    index = ToolIndex.load(args.index)
    texts: dict[str, list[np.ndarray]] = {f: [] for f in FIELDS}
    call: dict[str, object] = {}
    searcher = fh.searcher

    class Recorder:
        """Wraps the fused searcher: records each call's description and parameters texts."""

        def __init__(self, inner):
            self.inner = inner

        def search_hybrid(self, need_terms, need_offsets, need_ptr, par_terms, par_offsets, *rest):
            call["n"], call["scale"] = rest[3], rest[5]
            for f, t, o in (("description", need_terms[0], need_offsets[0]), ("parameters", par_terms, par_offsets)):
                texts[f].extend(np.asarray(t[o[i]:o[i + 1]], dtype=np.int32) for i in range(len(o) - 1))
            return self.inner.search_hybrid(need_terms, need_offsets, need_ptr, par_terms, par_offsets, *rest)

    import toolsift.search as search_mod

    # The recording pass on the Python path around the fused call (the one-call engine,
    # which also takes IVF fields since 2026-11-28, would not show the texts).
    real_text = search_mod.text_searcher
    fh.searcher = lambda st: Recorder(searcher(st))  # type: ignore[assignment]
    search_mod.text_searcher = lambda *a: None  # type: ignore[assignment]
    for q in raw:
        index.search(q, k=10)
    fh.searcher, search_mod.text_searcher = searcher, real_text

    out: dict[str, object] = {"label": args.label, "n": call["n"], "scale": call["scale"]}
    for f in FIELDS:
        ts = texts[f]
        offsets = np.concatenate([[0], np.cumsum([t.size for t in ts])]).astype(np.int64)
        terms = np.concatenate(ts).astype(np.int32)
        core = index._state.fields[f].core
        per_text = []
        for _ in range(args.rounds):
            c0 = time.thread_time()
            ids, scores = core.topk(terms, offsets, call["n"], scale=call["scale"], group=True, threads=1, prune="auto")
            per_text.append((time.thread_time() - c0) * 1e3 / len(ts))
        out[f] = {"texts": len(ts), "ms_per_text": per_text,
                  "digest": hashlib.sha1(ids.tobytes() + scores.tobytes()).hexdigest()[:10]}
    for q in raw[:20] + structured[:20]:
        index.search(q, k=10)
    lat = []
    c0 = time.process_time()
    for q in raw:
        t0 = time.perf_counter()
        index.search(q, k=10)
        lat.append(time.perf_counter() - t0)
    out["raw_p50_ms"] = float(np.percentile(lat, 50) * 1e3)
    out["raw_cpu_ms_per_query"] = (time.process_time() - c0) * 1e3 / len(raw)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["load_avg_1m"] = os.getloadavg()[0]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
