"""Whole-process timing of ``toolsift score`` (Parquet -> Parquet), start-up included.

Times the command from outside with ``farm-bench`` (the tool library's whole-process
timer: wall, user, system and peak memory of each run, median of interleaved runs), for
two source trees in the same run -- "before" (a baseline checkout) and "after" (this
one) -- on a saved BM25 index and a saved default (hybrid) index of APIGen's 3,605
tools, with the pairs of :func:`benchmarks.bench_batch.make_pairs` (shuffled APIGen
query x tool pairs, dictionary-encoded Parquet). Each comparison runs idle (whatever
else the machine is doing: the load average is printed) and busy (two spinning
processes of :mod:`benchmarks.busy` beside it).

Usage (results go to stdout; nothing is asserted)::

    python -m benchmarks.score_cli WORKDIR BEFORE_SRC AFTER_SRC [--pairs 5M] [--runs 3]

``BEFORE_SRC`` / ``AFTER_SRC`` are ``src`` directories put first on ``PYTHONPATH``
(each must hold a ``toolsift`` package with its compiled core).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .bench_batch import _count, make_pairs
from .busy import busy
from .conftest import DATA


def _prepare(work: Path, n_pairs: int) -> dict[str, Path]:
    from toolsift import ToolIndex
    from toolsift.evaluate import MftrDataset

    work.mkdir(parents=True, exist_ok=True)
    ds = MftrDataset.load(DATA / "mftr-apigen")
    out = {}
    for preset in ("bm25", "hybrid"):
        path = work / f"idx_{preset}"
        if not path.exists():
            ToolIndex.build(ds.raw_tools, preset=preset).save(path)
        out[preset] = path
    pairs = work / f"pairs_{n_pairs}.parquet"
    if not pairs.exists():
        make_pairs(pairs, n_pairs)
    out["pairs"] = pairs
    return out


def _command(src: str, index: Path, pairs: Path, out: Path) -> list[str]:
    exe = shutil.which("toolsift", path=str(Path(sys.executable).parent)) or "toolsift"
    return ["env", f"PYTHONPATH={src}", exe, "score", str(index), str(pairs), str(out), "--quiet"]


def _farm(after: list[str], before: list[str], runs: int) -> str:
    cmd = ["farm-bench", "-n", str(runs), "--warmup", "1", "--timeout", "900", "--vs", " ".join(before), "--",
           *after]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1000).stdout


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", type=Path)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--pairs", default="5M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--presets", default="bm25,hybrid")
    args = ap.parse_args(argv)
    files = _prepare(args.work, _count(args.pairs))
    for preset in args.presets.split(","):
        for condition in ("idle", "busy"):
            a = _command(args.after, files[preset], files["pairs"], args.work / "after.parquet")
            b = _command(args.before, files[preset], files["pairs"], args.work / "before.parquet")
            print(f"## {preset}, {condition}: A = after, B = before; load average {os.getloadavg()}", flush=True)
            if condition == "busy":
                with busy(2):
                    print(_farm(a, b, args.runs), flush=True)
            else:
                print(_farm(a, b, args.runs), flush=True)
            print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
