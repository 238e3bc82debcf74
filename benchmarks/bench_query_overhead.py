"""CPU per single-query ``ToolIndex.search``, this tree against a baseline tree, in one run.

A search's cost on a small catalogue is mostly fixed Python overhead (planning, packing,
ranking, explanations), paid by every ``find_tools`` of the gateway and by every
latency-bound caller. This benchmark measures it, and the same search on the pooled
``mftr-*`` catalogue, for the working tree and for a baseline source tree (e.g. ``git
archive main src/toolsift`` unpacked, with the built ``_core`` module copied beside it),
alternating the two in fresh processes so both see the same machine load.

Cases (CPU time, ``time.process_time``, per search; one thread):

* ``demo bm25 k=5 as find_tools``: the bundled 60-tool demo catalogue, the gateway's 16
  task queries, ``k=5, explain="why"``, what ``find_tools`` runs (a tree from before
  ``"why"`` existed takes it as ``explain=True``, which its ``find_tools`` ran);
* ``demo bm25 k=5 explain``: the same with ``explain=True``;
* ``demo bm25 k=5``: the same without explanations (the library default);
* ``pooled bm25 k=10`` and ``pooled hybrid k=10``: the 6,417 tools of the four ``mftr-*``
  sets, their raw test queries; ``hybrid`` is ``preset_config("hybrid")`` (static query
  encoder).

Run (numbers are reported, never asserted)::

    python -m benchmarks.bench_query_overhead --baseline /tmp/base/src --rounds 5 \\
        --out docs/results/query_overhead.md

Indexes are built once with the working tree into ``--index-dir`` and loaded by both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = (("demo bm25 k=5 as find_tools", "demo", "gateway", 5, "why"),
         ("demo bm25 k=5 explain", "demo", "gateway", 5, True),
         ("demo bm25 k=5", "demo", "gateway", 5, False),
         ("pooled bm25 k=10", "pooled_bm25", "pooled", 10, False),
         ("pooled hybrid k=10", "pooled_hybrid", "pooled", 10, False))


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _build(index_dir: Path) -> None:
    """Indexes and query lists shared by both trees (made by the working tree)."""
    from toolsift import ToolIndex
    from toolsift.adapters import demo_catalog_path, load_catalog
    from toolsift.presets import preset_config

    from .conftest import pooled
    from .http_load import queries

    index_dir.mkdir(parents=True, exist_ok=True)
    if not (index_dir / "demo").exists():
        ToolIndex.build(load_catalog(demo_catalog_path()), config=preset_config("bm25")).save(index_dir / "demo")
    if (index_dir / "pooled_hybrid").exists():
        return
    cat, pooled_queries = pooled()
    texts = [x.text for x in pooled_queries]
    ToolIndex.build(cat, config=preset_config("bm25")).save(index_dir / "pooled_bm25")
    ToolIndex.build(cat, config=preset_config("hybrid")).save(index_dir / "pooled_hybrid")
    (index_dir / "queries.json").write_text(json.dumps({"gateway": list(queries()), "pooled": texts}))


def _child(index_dir: Path, n: int, passes: int) -> dict[str, float]:
    """CPU µs per search of every case in this process: best pass of ``passes``."""
    from toolsift import ToolIndex

    qs = json.loads((index_dir / "queries.json").read_text())
    out = {}
    for name, index, qset, k, explain in CASES:
        ix = ToolIndex.load(index_dir / index)
        texts = qs[qset]
        for q in texts[:200]:  # warm the kernels and the decoded tools
            ix.search(q, k=k, explain=explain)
        best = float("inf")
        for p in range(passes):
            t0 = time.process_time()
            for i in range(n):
                ix.search(texts[(p * n + i) % len(texts)], k=k, explain=explain)
            best = min(best, (time.process_time() - t0) / n * 1e6)
        out[name] = best
    return out


def _run_child(src: str | None, index_dir: Path, n: int, passes: int) -> dict[str, float]:
    code = ("import sys\n"
            "src = sys.argv[1]\n"
            "if src:\n"
            # The editable install's import hook would find the working tree first.
            "    sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__.lower()\n"
            "                        and 'skbc' not in type(f).__module__.lower()]\n"
            "    sys.path.insert(0, src)\n"
            "import json, toolsift\n"
            "from benchmarks.bench_query_overhead import _child\n"
            "from pathlib import Path\n"
            "print(json.dumps({'file': toolsift.__file__, **_child(Path(sys.argv[2]), int(sys.argv[3]), "
            "int(sys.argv[4]))}))\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-c", code, src or "", str(index_dir), str(n), str(passes)],
                         capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1], check=True)
    got = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"  {got.pop('file')}", flush=True)
    return got


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="source folder holding the baseline's toolsift package")
    ap.add_argument("--baseline-name", default="", help="what the baseline is (e.g. a commit), for the results file")
    ap.add_argument("--index-dir", type=Path, default=Path("/tmp/toolsift-query-overhead"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--searches", type=int, default=2000, help="searches per pass")
    ap.add_argument("--passes", type=int, default=3, help="passes per case and process (best one counts)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    _build(args.index_dir)
    before = _loadavg()
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "this tree": []}
    for r in range(args.rounds):
        for label, src in (("baseline", args.baseline), ("this tree", None)):
            print(f"round {r + 1} {label} (load {_loadavg()})", flush=True)
            runs[label].append(_run_child(src, args.index_dir, args.searches, args.passes))
    after = _loadavg()
    rows = ["| case | baseline µs CPU/search | this tree µs CPU/search | ratio |", "|---|---:|---:|---:|"]
    for name, *_ in CASES:
        b = statistics.median(x[name] for x in runs["baseline"])
        t = statistics.median(x[name] for x in runs["this tree"])
        rows.append(f"| {name} | {b:.0f} | {t:.0f} | {t / b:.2f}x |")
    head = [f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}",
            f"- load average before the run: {before}; after: {after} (other jobs share the machine)",
            f"- baseline: {args.baseline_name or args.baseline}; this tree: {Path(__file__).resolve().parents[1]}",
            f"- {args.rounds} rounds, baseline and this tree alternating, each in a fresh process; per case "
            f"the best of {args.passes} passes of {args.searches} searches, then the median over rounds"]
    print("\n".join(head + [""] + rows))
    if args.out:
        cmd = " ".join(["python -m benchmarks.bench_query_overhead", *(argv if argv is not None else sys.argv[1:])])
        args.out.write_text("\n".join([f"# CPU per single-query search\n\n`{cmd}`\n", *head, "", *rows, ""]))


if __name__ == "__main__":
    main()
