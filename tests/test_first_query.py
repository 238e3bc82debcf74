"""A fresh process's first hybrid searches after ``ToolIndex.load`` compile nothing: the
static query encoder, the int8 kernels, the fused hybrid call and the MFTR scoring of the
multi-step path are the C++ core's, so Numba (and the SciPy it pulls in) is never
imported (issue 35)."""

from __future__ import annotations

import subprocess
import sys
from toolsift import ToolIndex
from toolsift.presets import preset_config

_SEARCH = """
import sys
from toolsift import ToolIndex
index = ToolIndex.load(sys.argv[1])
assert index.config.uses_dense
hits = index.search("take a picture of the front door", k=5)  # a semantic match
gibberish = index.search("qwxyzzy blorft", k=5)  # dense-only hits: the null floors are made
steps = index.search("get the weather in Paris, then send an email to Bob", k=5)  # two steps: the general path
assert {"get_current_weather", "send_email"} <= {h.id for h in steps}
print([h.id for h in hits], any(h.matched for h in gibberish))
print(sorted(m for m in ("numba", "scipy", "llvmlite") if m in sys.modules))
"""


def test_first_hybrid_search_in_a_fresh_process_imports_no_numba(demo_catalog, tmp_path):
    # The default preset on the demo catalogue: its examples field has example intents, so
    # a grouped dense field (several rows per tool) is scanned too.
    index = ToolIndex.build(demo_catalog, config=preset_config("hybrid"))
    assert index._state.dense["examples"].groups is not None
    index.save(tmp_path / "ix")
    proc = subprocess.run([sys.executable, "-c", _SEARCH, str(tmp_path / "ix")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    ids, loaded = proc.stdout.strip().splitlines()[-2:]
    assert "get_camera_snapshot" in ids
    assert loaded == "[]", proc.stdout + proc.stderr
