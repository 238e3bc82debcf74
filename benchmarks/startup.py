"""Start-up costs: ``toolsift --help``, an argument error, and the first query of a process.

    python benchmarks/startup.py [--runs 5]

Each figure is measured in fresh processes (``--runs`` of them; the median is printed
with min and max), after one untimed warm-up process so the Numba on-disk cache and the
OS file cache are warm, as on any install after its first use:

* ``--help`` and ``index --preset nope a b`` (an argument error): CPU seconds (user +
  system) of the whole process, from ``resource.getrusage(RUSAGE_CHILDREN)``;
* ``first query``: in a child process, ``ToolIndex.load`` of the demo index, then the
  first ``search`` (wall ms and process CPU ms), then a second one; once without and
  once after ``toolsift.kernels.warmup()``.

Prints a Markdown table and the 1-minute load average before and after, for
docs/performance.md. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from toolsift import ToolIndex
index = ToolIndex.load(sys.argv[1])
if sys.argv[2] == "warmup":
    from toolsift.kernels import warmup
    warmup()
t1, c1 = time.perf_counter(), time.process_time()
index.search("email the quarterly report to my manager", k=5, explain=True)
t2, c2 = time.perf_counter(), time.process_time()
index.search("will it rain in Lisbon tomorrow?", k=5, explain=True)
t3 = time.perf_counter()
print(json.dumps({"load_s": t1 - t0, "first_ms": (t2 - t1) * 1e3, "first_cpu_ms": (c2 - c1) * 1e3,
                  "second_ms": (t3 - t2) * 1e3}))
"""


def _cpu_of(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _spread(xs: list[float], fmt: str) -> str:
    return f"{format(statistics.median(xs), fmt)} ({format(min(xs), fmt)}–{format(max(xs), fmt)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    py = sys.executable
    load_before = os.getloadavg()[0]
    rows = []
    for label, argv in (("`toolsift --help` CPU s", [py, "-m", "toolsift", "--help"]),
                        ("argument error CPU s", [py, "-m", "toolsift", "index", "--preset", "nope", "a", "b"])):
        _cpu_of(argv)  # warm the file cache
        rows.append((label, _spread([_cpu_of(argv) for _ in range(args.runs)], ".3f")))
    with tempfile.TemporaryDirectory() as tmp:
        from toolsift import ToolIndex
        from toolsift.adapters import demo_catalog_path, load_catalog

        ToolIndex.build(load_catalog(demo_catalog_path()), preset="bm25").save(f"{tmp}/idx")
        for mode in ("plain", "warmup"):
            run = [py, "-c", CHILD, f"{tmp}/idx", mode]
            subprocess.run(run, capture_output=True, check=True)  # warm the Numba cache
            res = [json.loads(subprocess.run(run, capture_output=True, text=True, check=True).stdout)
                   for _ in range(args.runs)]
            tag = "" if mode == "plain" else " after `warmup()`"
            rows.append((f"first query{tag}, wall ms", _spread([r["first_ms"] for r in res], ".1f")))
            rows.append((f"first query{tag}, CPU ms", _spread([r["first_cpu_ms"] for r in res], ".1f")))
            rows.append((f"second query{tag}, wall ms", _spread([r["second_ms"] for r in res], ".2f")))
            rows.append((f"import + load{tag}, wall s", _spread([r["load_s"] for r in res], ".2f")))
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, load average (1 min) "
          f"{load_before:.2f} before / {os.getloadavg()[0]:.2f} after, {args.runs} runs each (median, min–max)\n")
    print("| what | value |\n|---|---|")
    for label, value in rows:
        print(f"| {label} | {value} |")


if __name__ == "__main__":
    main()
