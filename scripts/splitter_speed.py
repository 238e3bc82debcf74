"""The multi-step splitter's cost per search, before and after a change, in one run.

``request_steps`` (the coarse pre-check ``needs._may_split``, then
``decompose.steps.may_split`` and ``split_steps``) runs on every raw search of a hybrid
index. This script loads the splitter of git revision ``--before`` (its
``decompose/steps.py`` and ``search/needs.py``, executed from ``git show`` as modules of
the package) beside the working tree's, checks both give the same steps for every text,
and times them text by text, alternating which goes first, over:

* ``pooled``: the first ``--n`` pooled raw queries (the four MFTR sets' fold test
  queries, the order of ``scripts/hybrid_phases.py``);
* ``stress``: the stress set's multi-step requests (``load_pseudo("stress")``).

With ``--search`` it also times ``ToolIndex.search`` whole on the hybrid preset over the
6,417 pooled tools (one thread), alternating the two splitters (patched into
``toolsift.search.needs.request_steps``, which the search imports per call).
``--busy`` runs everything beside two CPU-spinning processes (``benchmarks/busy.py``).

Run: ``TOOLSIFT_DATA=../shared/data python scripts/splitter_speed.py [--before REV] [--busy] [--search]``
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _module_at(rev: str, path: str, name: str):
    """The file ``path`` at git revision ``rev``, executed as module ``name``."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True,
                            capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = f"{rev}:{path}"
    sys.modules[name] = mod
    exec(compile(source, mod.__file__, "exec"), mod.__dict__)  # our own repository's file
    return mod


def splitters(rev: str):
    """``(before, after)``: two ``request_steps`` functions."""
    from toolsift.search import needs

    steps = _module_at(rev, "src/toolsift/decompose/steps.py", "toolsift.decompose._steps_before")
    old = _module_at(rev, "src/toolsift/search/needs.py", "toolsift.search._needs_before")
    old._split = lambda text: (steps.split_steps(text, max_steps=old.MAX_STEPS) if steps.may_split(text)
                               else [text])
    return old.request_steps, needs.request_steps


def _texts(n: int) -> dict[str, list[str]]:
    from benchmarks.conftest import SETS, _load
    from toolsift.evaluate.pooled import load_pseudo

    pooled = [q.text for ds in SETS for q in _load(ds)[1]]
    return {"pooled": pooled[:n], "stress": [q.text for q in load_pseudo("stress").queries]}


def _stats(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v) * 1e6
    return float(np.median(a)), float(np.percentile(a, 99))


def _row(name: str, what: str, got: dict[str, list[float]]) -> str:
    (b50, b99), (a50, a99) = _stats(got["before"]), _stats(got["after"])
    return (f"| {name} | {what} | {b50:.1f} | {a50:.1f} | {b50 / a50:.2f}x | {b99:.1f} | {a99:.1f} | "
            f"{b99 / a99:.2f}x |")


def time_splitters(before, after, texts: dict[str, list[str]], passes: int) -> list[str]:
    from types import SimpleNamespace

    from toolsift.query_types import Query

    st, cfg = SimpleNamespace(dense={"description": None}), SimpleNamespace(split_steps=True)
    rows = []
    for name, group in texts.items():
        qs = [Query.from_text(t) for t in group]
        for q in qs:
            assert before(st, cfg, [q]) == after(st, cfg, [q]), q.text
        got: dict[str, list[float]] = {"before": [], "after": []}
        own: dict[str, list[list[float]]] = {"before": [[] for _ in qs], "after": [[] for _ in qs]}
        c = time.perf_counter
        for p in range(passes):
            for i, q in enumerate(qs):
                order = (("before", before), ("after", after)) if (i + p) % 2 else (("after", after),
                                                                                    ("before", before))
                for label, fn in order:
                    t0 = c()
                    fn(st, cfg, [q])
                    dt = c() - t0
                    got[label].append(dt)
                    own[label][i].append(dt)
        multi = sum(after(st, cfg, [q])[0] is not None for q in qs)
        what = f"{len(qs)} ({multi} split)"
        rows.append(_row(name, f"{what} x {passes}, every call", got))
        # Each request's fastest call: its own cost, without the preemptions of a shared machine.
        rows.append(_row(name, f"{what}, fastest of {passes} per request",
                         {k: [min(v) for v in own[k]] for k in own}))
    return rows


def time_search(before, after, n: int, passes: int) -> list[str]:
    from benchmarks.conftest import SETS, _load
    from toolsift import Catalog, ToolIndex
    from toolsift.presets import preset_config
    from toolsift.search import needs

    tools, texts = [], []
    for ds in SETS:
        t, q = _load(ds)
        tools.extend(t)
        texts.extend(x.text for x in q)
    texts = texts[:n]
    ix = ToolIndex.build(Catalog(tools, name="mftr-all"), config=preset_config("hybrid", threads=1))
    for t in texts[:100]:
        ix.search(t, k=10)
    got: dict[str, list[float]] = {"before": [], "after": []}
    own: dict[str, list[list[float]]] = {"before": [[] for _ in texts], "after": [[] for _ in texts]}
    c = time.perf_counter
    try:
        for p in range(passes):
            for i, t in enumerate(texts):
                order = (("before", before), ("after", after)) if (i + p) % 2 else (("after", after),
                                                                                    ("before", before))
                for label, fn in order:
                    needs.request_steps = fn  # search() imports it from .needs per call
                    t0 = c()
                    ix.search(t, k=10)
                    dt = c() - t0
                    got[label].append(dt)
                    own[label][i].append(dt)
    finally:
        needs.request_steps = after
    name = "ToolIndex.search, hybrid, 6,417 tools"
    return [_row(name, f"{len(texts)} x {passes}, every call", got),
            _row(name, f"{len(texts)}, fastest of {passes} per request", {k: [min(v) for v in own[k]] for k in own})]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="126fbc7", help="git revision of the baseline splitter")
    ap.add_argument("--n", type=int, default=600, help="pooled raw queries")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--busy", action="store_true", help="beside two CPU-spinning processes")
    ap.add_argument("--search", action="store_true", help="also time ToolIndex.search whole")
    args = ap.parse_args()
    before, after = splitters(args.before)
    texts = _texts(args.n)
    from benchmarks.busy import busy

    with busy(2) if args.busy else contextlib.nullcontext():
        rows = time_splitters(before, after, texts, args.passes)
        if args.search:
            rows += time_search(before, after, args.n, args.passes)
    print(f"before = {args.before}, after = working tree; {'busy (2 spinners)' if args.busy else 'idle'}; "
          f"times in us per request")
    print("| texts | requests | p50 before | p50 after | p50 ratio | p99 before | p99 after | p99 ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
