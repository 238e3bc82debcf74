"""The default build a user waits for (issue 34, item 5): ``ToolIndex.build(tools)`` with
default settings (the hybrid preset, document embedding on every available core) of the
6,417 pooled mftr tools, from an empty embedding cache and from a full one, each in a
fresh process (model load included), plus the same with ``embed_threads=1``.

Run: ``python -m benchmarks.default_build [--out docs/results/FILE.md] [--skip-one-thread]``.
Prints (and writes) wall and CPU seconds per build, the texts embedded, the cores used,
the 1-minute load average before and after each run; nothing is asserted. On a shared
machine wall time measures the load as much as the code: read CPU s next to it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from toolsift import Catalog, ToolIndex
from benchmarks.conftest import SETS, _load
from toolsift.presets import preset_config
tools = []
for ds in SETS:
    tools.extend(_load(ds)[0])
cat = Catalog(tools, name="mftr-all")
t1, c1 = time.perf_counter(), time.process_time()
kw = json.loads(sys.argv[1])
index = ToolIndex.build(cat, config=preset_config(**kw)) if kw else ToolIndex.build(cat)
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"tools": len(cat), "load_s": t1 - t0, "build_s": t2 - t1, "build_cpu_s": c2 - c1,
                  "preset_embed_threads": index.config.embed_threads, "encoder": index.config.encoder}))
"""


def _run(cache: Path, overrides: dict) -> dict:
    from toolsift.cpus import available_cpus

    env = {**os.environ, "TOOLSIFT_EMBED_CACHE_DIR": str(cache)}
    env.pop("TOOLSIFT_EMBED_CACHE", None)
    load0 = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(overrides)], capture_output=True, text=True,
                          env=env, cwd=Path(__file__).resolve().parents[1], check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out.update(load_before=load0, load_after=os.getloadavg()[0], cpus=available_cpus(),
               entries=sum(1 for _ in cache.glob("??/*")))
    return out


def _line(name: str, r: dict) -> str:
    return (f"| {name} | {r['build_s']:.1f} | {r['build_cpu_s']:.1f} | {r['build_cpu_s'] / r['build_s']:.2f} | "
            f"{r['entries']} | {r['load_before']:.1f} / {r['load_after']:.1f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="also write the results as Markdown here")
    ap.add_argument("--skip-one-thread", action="store_true", help="only the default settings")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="toolsift-default-build-") as tmp:
        cache = Path(tmp) / "default"
        rows.append(("default settings, empty cache", _run(cache, {})))
        rows.append(("default settings, full cache", _run(cache, {})))
        if not args.skip_one_thread:
            rows.append(("embed_threads=1, empty cache", _run(Path(tmp) / "one", {"embed_threads": 1})))
    head = (f"`python -m benchmarks.default_build` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{platform.processor() or platform.machine()}, {rows[0][1]['cpus']} available CPUs, "
            f"{rows[0][1]['tools']} pooled tools (each build in a fresh process: imports, model load, "
            f"BM25 fields, embedding, query table)\n\n"
            "| build | wall s | CPU s | cores used | cache entries after | load avg before / after |\n"
            "|---|---|---|---|---|---|")
    text = "\n".join([head, *(_line(n, r) for n, r in rows)]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
