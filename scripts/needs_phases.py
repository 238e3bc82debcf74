"""Where a multi-step request's search time goes: CPU time of the calling thread per
stage of :func:`toolsift.search.needs.run_steps`, per request, on the stress set.

Builds the ``hybrid`` preset over the 6,417 pooled mftr tools (one thread; the embedding
cache makes it seconds), warms up, then searches the first ``N`` stress requests once
each (``toolsift eval stress``, seed 0; ~85% of them split), timing each stage with
``time.thread_time`` (wrappers add ~1 us a call). Stages nest: ``run_steps`` includes
the stages below it; ``request_steps`` (the splitter) runs before it.

Run: ``TOOLSIFT_DATA=../shared/data python scripts/needs_phases.py [N]`` (default 400).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STAGES = ("plan_queries", "reading_vectors", "find_candidates", "pack", "score", "combine_needs", "rank")


def main(n: int) -> None:
    import toolsift.search.needs as needs
    from benchmarks.conftest import SETS, _load
    from benchmarks.synthetic import data_dir
    from toolsift import Catalog, ToolIndex
    from toolsift.evaluate.pooled import load_pseudo
    from toolsift.presets import preset_config

    spent: dict[str, float] = {}

    def timed(module, name):
        fn = getattr(module, name)

        def wrapper(*a, **kw):
            c0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.thread_time() - c0

        setattr(module, name, wrapper)

    tools = [t for ds in SETS for t in _load(ds)[0]]
    index = ToolIndex.build(Catalog(tools, name="mftr-all"), config=preset_config("hybrid", threads=1))
    texts = [r.text for r in load_pseudo("stress", data_dir()).queries][:n]
    for name in STAGES:
        timed(needs, name)
    # search() imports both from needs at call time: wrapping them there is enough.
    timed(needs, "request_steps")
    timed(needs, "run_steps")
    for q in texts[:20]:
        index.search(q, k=10)
    spent.clear()
    c0 = time.thread_time()
    for q in texts:
        index.search(q, k=10)
    total = time.thread_time() - c0
    print(f"{len(texts)} stress requests, {len(tools)} tools, CPU ms per request (calling thread):")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:16s} {s / len(texts) * 1e3:.3f}")
    print(f"  {'search (all)':16s} {total / len(texts) * 1e3:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
