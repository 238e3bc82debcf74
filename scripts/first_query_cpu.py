"""CPU time of the first hybrid search in a fresh process, after ``ToolIndex.load``.

Builds the ``hybrid`` preset over the 6,417 pooled mftr tools once (one thread; the
embedding cache makes it seconds) and saves it to a temporary folder; then, for each of
three queries (a plain request, a multi-step one, and gibberish whose dense-only hits
make the null floors), starts ``--runs`` fresh interpreters that each load the index and
search once, and prints the median CPU milliseconds (user + system, this process) of the
load and of the first search, and whether Numba was imported.

Run: ``TOOLSIFT_DATA=../shared/data python scripts/first_query_cpu.py [--runs 5]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERIES = {"plain": "find the weather forecast for a city",
           "multi-step": "get the weather in Paris, then send an email to Bob with the forecast",
           "gibberish": "qwxyzzy blorft"}

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from benchmarks.conftest import SETS, _load
    from toolsift import Catalog, ToolIndex
    from toolsift.presets import preset_config

    tools = [t for ds in SETS for t in _load(ds)[0]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index"
        ToolIndex.build(Catalog(tools, name="mftr-all"), config=preset_config("hybrid", threads=1)).save(path)
        print(f"{len(tools)} pooled tools, hybrid preset; median of {args.runs} fresh processes each\n")
        print("| query | load CPU ms | first search CPU ms | Numba imported |")
        print("|---|---|---|---|")
        for name, text in QUERIES.items():
            got = [json.loads(subprocess.run([sys.executable, "-c", _CHILD, str(path), text], capture_output=True,
                                             text=True, check=True).stdout.strip().splitlines()[-1])
                   for _ in range(args.runs)]
            load = np.median([g["load"] for g in got])
            first = np.median([g["first"] for g in got])
            print(f"| {name} | {load:.0f} | {first:.0f} | {'yes' if any(g['numba'] for g in got) else 'no'} |")


if __name__ == "__main__":
    main()
