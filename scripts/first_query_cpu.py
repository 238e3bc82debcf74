"""CPU time of the first hybrid search in a fresh process, after ``ToolIndex.load``.

Builds the ``hybrid`` preset over the 6,417 pooled mftr tools once per source tree (one
thread; the embedding cache makes it seconds) and saves it to a temporary folder; then,
``--runs`` rounds, each starting for every tree and each of three queries (a plain
request, a multi-step one, and gibberish whose hits are dense-only, so they need the null
floors) a fresh interpreter that loads the index and searches once. Prints per tree and
query the median (and range) of the CPU milliseconds (user + system, that process) of the
load and of the first search, and whether Numba was imported.

Each tree's modules are byte-compiled first, as ``pip install`` does (with
``PYTHONDONTWRITEBYTECODE`` set, every process would otherwise compile them from source).
Rounds alternate the trees, so a change of machine load falls on all of them alike.

``--prefilter`` also prints, for the last tree, what the description field's 4-bit
prefilter costs to build (CPU ms) and saves a scan (µs with and without it, five requests
at the hybrid candidate depth), which sets ``DenseField``'s ``COARSE_AFTER_SCANS``.

Run: ``TOOLSIFT_DATA=../shared/data python scripts/first_query_cpu.py [--runs 5]
[--src OLD/src NEW/src] [--busy 2] [--prefilter]`` (default ``--src``: the toolsift this
Python imports).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUERIES = {"plain": "find the weather forecast for a city",
           "multi-step": "get the weather in Paris, then send an email to Bob with the forecast",
           "gibberish": "qwxyzzy blorft"}

_BUILD = """
import sys
sys.path.insert(0, sys.argv[2])
from benchmarks.conftest import SETS, _load
from toolsift import Catalog, ToolIndex
from toolsift.presets import preset_config
tools = [t for ds in SETS for t in _load(ds)[0]]
ToolIndex.build(Catalog(tools, name="mftr-all"), config=preset_config("hybrid", threads=1)).save(sys.argv[1])
print(len(tools))
"""

_CHILD = """
import json, resource, sys
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c0 = cpu()
from toolsift import ToolIndex
index = ToolIndex.load(sys.argv[1])
c1 = cpu()
index.search(sys.argv[2], k=10)
c2 = cpu()
print(json.dumps({"load": (c1 - c0) * 1e3, "first": (c2 - c1) * 1e3, "numba": "numba" in sys.modules}))
"""


_PREFILTER = """
import sys, time
import numpy as np
from toolsift import ToolIndex, _core
from toolsift.index.dense_field import encode_texts
from toolsift.index.query_table import query_encoder_for
from toolsift.kernels.int8 import quantize_rows, top_trusted
index = ToolIndex.load(sys.argv[1])
live, m = index._state.dense["description"].live_rows()
builds = []
for _ in range(5):
    t = time.process_time()
    coarse = _core.int8_coarse(m.codes, m.scales)
    builds.append((time.process_time() - t) * 1e3)
enc, n = query_encoder_for(index._state, index.config), index.config.dense_candidates
scans = {"without": [], "with": []}
for text in sys.argv[2:]:
    qc, qs = quantize_rows(encode_texts(enc, [text]))
    for name, c in (("without", None), ("with", coarse)):
        t = time.perf_counter()
        for _ in range(200):
            top_trusted(qc, qs, m.codes, m.scales, live, n, coarse=c)
        scans[name].append((time.perf_counter() - t) / 200 * 1e6)
print(f"prefilter of {m.n_rows} rows: build {np.median(builds):.1f} ms CPU (median of 5, "
      f"{min(builds):.1f}-{max(builds):.1f}); a scan for {n} tools: {np.median(scans['without']):.0f} us without, "
      f"{np.median(scans['with']):.0f} us with (medians over {len(sys.argv) - 2} requests x 200 calls)")
"""


def _env(src: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": src}


def _measure(trees: list[str], paths: dict[str, Path], runs: int) -> dict[tuple[str, str], list[dict]]:
    got: dict[tuple[str, str], list[dict]] = {}
    for _ in range(runs):
        for src in trees:
            for name, text in QUERIES.items():
                out = subprocess.run([sys.executable, "-c", _CHILD, str(paths[src]), text], capture_output=True,
                                     text=True, check=True, env=_env(src)).stdout
                got.setdefault((src, name), []).append(json.loads(out.strip().splitlines()[-1]))
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--src", nargs="+", help="source trees (each holding toolsift/) to compare")
    ap.add_argument("--busy", type=int, default=0, help="CPU-spinning background processes (benchmarks/busy.py)")
    ap.add_argument("--prefilter", action="store_true", help="also time the dense prefilter's build and scans")
    args = ap.parse_args()
    if args.src:
        trees = [str(Path(s).resolve()) for s in args.src]
    else:
        import toolsift

        trees = [str(Path(toolsift.__file__).resolve().parents[1])]
    from benchmarks.busy import busy

    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for i, src in enumerate(trees):
            compileall.compile_dir(str(Path(src) / "toolsift"), quiet=1)
            paths[src] = Path(tmp) / f"index{i}"
            n = subprocess.run([sys.executable, "-c", _BUILD, str(paths[src]), str(REPO)], capture_output=True,
                               text=True, check=True, env=_env(src)).stdout.strip().splitlines()[-1]
        with busy(args.busy):
            got = _measure(trees, paths, args.runs)
            if args.prefilter:
                texts = ["find the weather forecast for a city", "send an email to bob", "convert 20 usd to eur",
                         "search github repositories", "translate this text to french"]
                pre = subprocess.run([sys.executable, "-c", _PREFILTER, str(paths[trees[-1]]), *texts],
                                     capture_output=True, text=True, check=True, env=_env(trees[-1])).stdout.strip()
        print(f"{n} pooled tools, hybrid preset; {args.runs} fresh processes per cell, trees alternating; "
              f"{args.busy} busy processes\n")
        print("| tree | query | load CPU ms (median) | first search CPU ms: median | min-max | Numba imported |")
        print("|---|---|---|---|---|---|")
        for (src, name), g in got.items():
            first = [x["first"] for x in g]
            print(f"| {src} | {name} | {np.median([x['load'] for x in g]):.0f} | {np.median(first):.0f} | "
                  f"{min(first):.0f}-{max(first):.0f} | {'yes' if any(x['numba'] for x in g) else 'no'} |")
        if args.prefilter:
            print(f"\n{pre}")


if __name__ == "__main__":
    main()
