"""Whole-process CPU of ``toolsift search`` and ``toolsift demo``, source trees side by side.

    python benchmarks/startup_cli.py --tree before=/path/a/src --tree after=/path/b/src \\
        --search bm25=IDX_DIR --search hybrid=IDX_DIR --demo --runs 3 [--busy 2]

Each command runs in a fresh process per run with ``PYTHONPATH`` set to each tree in
turn (A B A B ...: the trees see the same machine), and its CPU seconds (user + system,
``getrusage(RUSAGE_CHILDREN)``, as ``/usr/bin/time`` reports them) are printed per run
with the median and the ratio of each tree's median to the first tree's. ``--demo`` runs
``python -m toolsift demo`` from an empty embedding cache (``TOOLSIFT_EMBED_CACHE_DIR``)
and an empty Numba cache (``NUMBA_CACHE_DIR``), each a fresh folder per run: what the
README's first command pays right after ``pip install``. ``--busy 2`` runs everything
beside two CPU-spinning processes (benchmarks/busy.py). One untimed run of every
command and tree comes first (the OS file cache). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from busy import busy

QUERY = "send an email to my manager"


def _cpu(argv: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _run(argv: list[str], tree: str, fresh_caches: bool) -> float:
    env = {**os.environ, "PYTHONPATH": tree}
    if not fresh_caches:
        return _cpu(argv, env)
    with tempfile.TemporaryDirectory(prefix="startup-cli-") as tmp:
        env["TOOLSIFT_EMBED_CACHE_DIR"] = str(Path(tmp) / "embeddings")
        env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba")
        return _cpu(argv, env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, metavar="NAME=SRC",
                    help="a source tree to put on PYTHONPATH (the first is the baseline)")
    ap.add_argument("--search", action="append", default=[], metavar="NAME=INDEX",
                    help=f"time `toolsift search INDEX {QUERY!r}` (repeatable)")
    ap.add_argument("--demo", action="store_true", help="time `toolsift demo` from empty caches")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--busy", type=int, default=0, help="CPU-spinning processes beside the runs")
    args = ap.parse_args()
    trees = [t.split("=", 1) for t in args.tree]
    py = sys.executable
    cases = [(f"search, {name} index", [py, "-m", "toolsift", "search", idx, QUERY], False)
             for name, idx in (s.split("=", 1) for s in args.search)]
    if args.demo:
        cases.append(("demo, empty caches", [py, "-m", "toolsift", "demo"], True))
    load_before, started = os.getloadavg()[0], time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    rows = []
    with busy(args.busy) if args.busy else nullcontext():
        for label, argv, fresh in cases:
            for _, tree in trees:
                _run(argv, tree, fresh)  # untimed: the OS file cache
            got: dict[str, list[float]] = {name: [] for name, _ in trees}
            for _ in range(args.runs):
                for name, tree in trees:
                    got[name].append(_run(argv, tree, fresh))
            base = statistics.median(got[trees[0][0]])
            for name, _ in trees:
                med = statistics.median(got[name])
                rows.append((label, name, ", ".join(f"{x:.3f}" for x in got[name]), f"{med:.3f}",
                             f"{med / base:.2f}"))
    print(f"{started}, {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{'busy: ' + str(args.busy) + ' spinning processes' if args.busy else 'no added load'}, "
          f"load average (1 min) {load_before:.2f} before / {os.getloadavg()[0]:.2f} after, "
          f"{args.runs} runs per tree, alternating\n")
    print("| command | tree | CPU s per run | median | ratio |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
