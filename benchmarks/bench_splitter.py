"""The request step splitter in C++ (decompose.steps_native) against the Python rules it
ports (decompose.steps' ``*_py`` reference functions), per call and inside a search.

Texts: the four ``mftr-*`` sets' raw test queries (:func:`benchmarks.conftest.pooled`) and
the multi-step stress set's 600 requests (``toolsift eval stress``, seed 0). Per call,
query by query with the order rotating (:func:`benchmarks.conftest.interleaved`):

* ``several_steps``: the whole splitter (lines, sentences, clauses, merge), Python vs C++;
* ``search question``: what a search asks (``search.needs._steps_of`` with the splitter
  loaded: ``may_split``, then ``several_steps`` when it passes), Python vs C++;
* ``ToolIndex.search``: the default (hybrid) preset on the 6,417 pooled tools, k = 10,
  one thread, with the C++ splitter and with it switched off (the Python rules), the first
  ``--queries`` texts of each set.

Idle and busy (two spinning processes, :mod:`benchmarks.busy`). Numbers are reported,
never asserted::

    python -m benchmarks.bench_splitter --out docs/results/splitter-cpp-2026-11-28.md
"""

from __future__ import annotations


import numpy as np

from .conftest import emit, idle_and_busy, module_args, pooled, run_header

K = 10
MAX_STEPS = 8


def _texts() -> dict[str, list[str]]:
    from toolsift.evaluate.pooled import load_pseudo

    from .synthetic import data_dir

    _, queries = pooled()
    return {"pooled queries": [q.text for q in queries],
            "stress requests": [q.text for q in load_pseudo("stress", data_dir()).queries]}


def _splitter_calls() -> dict:
    from toolsift.decompose import steps
    from toolsift.decompose.steps_native import splitter

    sp = splitter()
    assert sp is not None, "this core has no C++ splitter"
    return {
        "several_steps python": lambda t: steps._several_steps_py(t, MAX_STEPS),
        "several_steps C++": lambda t: sp.several_steps(t, MAX_STEPS),
        "search question python": lambda t: steps._several_steps_py(t, MAX_STEPS) if steps._may_split_py(t) else None,
        "search question C++": lambda t: sp.search_steps(t, MAX_STEPS),
    }


def _search_calls():
    from toolsift import ToolIndex
    from toolsift.decompose import steps_native
    from toolsift.presets import preset_config

    cat, _ = pooled()
    idx = ToolIndex.build(cat, config=preset_config("hybrid", threads=1))
    made = steps_native.splitter()

    def with_splitter(native):
        def call(text):
            steps_native._splitter = made if native else False  # False: the Python rules
            try:
                return idx.search(text, k=K)
            finally:
                steps_native._splitter = made
        return call

    calls = {"search, python splitter": with_splitter(False), "search, C++ splitter": with_splitter(True)}
    return len(cat), calls, idx.config.analyzer._memo.cache_clear


def _rows(lat: dict, pairs: list[tuple[str, str]]) -> list[str]:
    rows = []
    for cond, by_name in lat.items():
        for slow, fast in pairs:
            a, b = by_name[slow] * 1e6, by_name[fast] * 1e6
            rows.append(f"| {cond} | {slow} | {np.percentile(a, 50):.1f} | {a.mean():.1f} | |")
            rows.append(f"| {cond} | {fast} | {np.percentile(b, 50):.1f} | {b.mean():.1f} | "
                        f"{a.mean() / b.mean():.1f}x (mean), {np.percentile(a, 50) / np.percentile(b, 50):.1f}x (p50) |")
    return rows


def main(argv: list[str] | None = None) -> None:
    args = module_args(__doc__, argv, queries=300, rounds=2, queries_help='texts per set for the search rows')
    texts = _texts()
    calls = _splitter_calls()
    pairs = [("several_steps python", "several_steps C++"), ("search question python", "search question C++")]
    head = "| condition | call | p50 us | mean us | python / C++ |"
    lines: list[str] = []
    loads: dict = {}
    for name, ts in texts.items():
        lat, loads = idle_and_busy(calls, ts, lambda: None, args.rounds)
        lines += ["", f"**Per call, {name}** ({len(ts)} texts, {args.rounds} rounds):", "", head, "|---|---|---|---|---|",
                  *_rows(lat, pairs)]
    n_tools, search, forget = _search_calls()
    for name, ts in texts.items():
        ts = ts[:args.queries]
        lat, loads = idle_and_busy(search, ts, forget, args.rounds)
        lines += ["", f"**ToolIndex.search (hybrid, {n_tools} tools, k = {K}), {name}** (the first {len(ts)}, "
                  f"{args.rounds} rounds):", "", head, "|---|---|---|---|---|",
                  *_rows(lat, [("search, python splitter", "search, C++ splitter")])]
    out = [*run_header(n_tools, args.queries, K, args.rounds, loads), *lines]
    emit(out, args.out)


if __name__ == "__main__":
    main()
