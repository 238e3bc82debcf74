"""The ONNX encoder plans its threads from the CPUs this process may use (issue 37, item 9).

``threads=0`` ("all cores") meant ``os.cpu_count()``: under ``taskset -c 0`` on a 2-core
machine the encoder planned 2 sessions where :func:`toolsift.cpus.available_cpus` says 1.
A child process pinned to one CPU (``sched_setaffinity``) builds the default encoder and
reports what it planned.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests._procs import HANG_GUARD_S, env

pytest.importorskip("onnxruntime")

CHILD = """
import json, os
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from toolsift.cpus import available_cpus
from toolsift.encoders.onnx import OnnxEncoder
sessions = OnnxEncoder(threads=0)
intra = OnnxEncoder(threads=0, parallel="intra-op")
print(json.dumps({"available": available_cpus(), "cpu_count": os.cpu_count(), "sessions": sessions._workers,
                  "intra": intra._workers,
                  "intra_threads": intra._session.get_session_options().intra_op_num_threads}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_threads_zero_means_the_cpus_this_process_may_use():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env(),
                          stdin=subprocess.DEVNULL, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["available"] == 1
    assert got["sessions"] == got["intra"] == got["intra_threads"] == 1, got
