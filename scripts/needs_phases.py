"""Where a multi-step request's search time goes: CPU time of the calling thread per
stage, per request, on the stress set: the splitter (``text_steps``) and the one engine
call (``TextSearch.steps``, toolsift.search.hybrid_text), or with ``--python`` the stages
of the Python path (:func:`toolsift.search.needs.run_steps`) that the engine call replaced
(which that run takes for every request).

Builds the ``hybrid`` preset over the 6,417 pooled mftr tools (one thread; the embedding
cache makes it seconds), warms up, then searches the first ``N`` stress requests once
each (``toolsift eval stress``, seed 0; ~85% of them split), timing each stage with
``time.thread_time`` (wrappers add ~1 us a call). Stages nest: ``run_steps`` includes
the stages below it; ``text_steps`` (the splitter) runs before it. Requests the engine
hands back (a reading that is not ASCII) take ``run_steps`` in the engine's run too.

Run: ``TOOLSIFT_DATA=../shared/data python scripts/needs_phases.py [N] [--python]`` (default 400).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STAGES = ("plan_queries", "reading_vectors", "find_candidates", "pack", "score", "combine_needs", "rank")


def main(n: int, python: bool) -> None:
    import toolsift.search.hybrid_text as hybrid_text
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
    if python:
        # The engine hands every multi-step request back: run_steps takes them all.
        hybrid_text.TextSearch.steps = lambda self, readings, k: None  # type: ignore[method-assign]
        for name in STAGES:
            timed(needs, name)
    else:
        timed(hybrid_text.TextSearch, "steps")
    # search imports these from needs at call time: wrapping them there is enough
    # (text_steps: the splitter of ToolIndex.search's raw text; request_steps: of Query batches).
    timed(needs, "text_steps")
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
    args = [a for a in sys.argv[1:] if a != "--python"]
    main(int(args[0]) if args else 400, "--python" in sys.argv[1:])
