"""Does taking a hybrid field's dense candidates from an IVF probe change what the default
finds?

For each shared set, the pooled 6,417 tools (all pooled queries) and the multi-step stress
set: ``toolsift eval DATASET --method default,default-densehalf --no-feedback`` (the
hybrid preset with each set's leave-one-dataset-out weights, static queries, raw tools,
raw queries; no LLM, no labels, no feedback) under four settings of the dense candidates:

* ``exact``: no IVF (``ivf_min_docs`` above every catalogue): an exact scan of every row;
* ``ivf 1/8``: the default (IVF from ``ivf_min_docs`` = 1,000 documents, ``ivf_nprobe=None``:
  an eighth of the lists);
* ``ivf 1/4``: twice the probes (``ivf_nprobe`` = a quarter of each catalogue's lists);
* ``none``: no dense candidates at all (``dense_candidates_from=("parameters",)``: only
  BM25's candidates, every hybrid field still scoring them with its cosine): the floor an
  IVF that found nothing would fall to.

``default-densehalf`` is the default with BM25's share of the hybrid fields at 0, where
the dense candidates matter most. Each setting runs in its own process (the preset is
patched before ``toolsift.cli`` loads). Prints N@10 per set and setting; ``--out`` also
writes them as a Markdown table with the machine and date.

Usage: python scripts/ivf_default_check.py [--data ../shared/data] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

SETS = ("mftr-apibank", "mftr-apigen", "mftr-gorilla-huggingface", "mftr-toolink", "ultratool", "pooled", "stress")
SETTINGS = ("exact", "ivf 1/8", "ivf 1/4", "none")
METHODS = ("default", "default-densehalf")

# Run in a child process: patch the preset, then the eval CLI.
_CHILD = """
import sys
from dataclasses import replace
import toolsift.presets as P
setting = sys.argv[1]
real = P.preset_config

def patched(*a, **kw):
    c = real(*a, **kw)
    if not c.uses_dense:
        return c
    if setting == "exact":
        return replace(c, ivf_min_docs=10**12)
    if setting == "ivf 1/4":
        import toolsift.index.ivf as ivf
        ivf.PROBE_SHARE = 4
    if setting == "none":
        return replace(c, dense_candidates_from=("parameters",), ivf_min_docs=10**12)
    return c

P.preset_config = patched
from toolsift.cli import main
sys.exit(main(sys.argv[2:]))
"""


def n_at_10(setting: str, dataset: str, data: Path) -> dict[str, float]:
    target = dataset if dataset in ("pooled", "stress") else str(data / dataset)
    argv = [sys.executable, "-c", _CHILD, setting, "eval", target, "--data", str(data), "--method",
            ",".join(METHODS), "--no-feedback", "--json", "--quiet"]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    got = json.loads(out)
    return {m: got[m]["ndcg@10"] for m in METHODS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("TOOLSIFT_DATA", "../shared/data")))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    lines = [f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
             f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             "N@10, `--no-feedback`, LODO weights (pytrec_eval). Settings: see the script's docstring.", "",
             "| set | method | " + " | ".join(SETTINGS) + " |", "|---|---|" + "---|" * len(SETTINGS)]
    print("\n".join(lines), flush=True)
    for ds in SETS:
        rows = {s: n_at_10(s, ds, args.data) for s in SETTINGS}
        for m in METHODS:
            line = f"| {ds} | {m} | " + " | ".join(f"{rows[s][m]:.4f}" for s in SETTINGS) + " |"
            lines.append(line)
            print(line, flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
