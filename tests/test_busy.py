"""The benchmarks' busy-machine helper: spinners run inside the block, really use the CPU,
and never outlive it (normal exit, error, or their own time bound)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmarks.busy import busy


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime in clock ticks (USER_HZ)


def test_spinners_run_inside_and_stop_after():
    with busy(2) as procs:
        assert len(procs) == 2
        assert all(p.poll() is None for p in procs)
        if Path("/proc/self/stat").exists():
            before = [_cpu_seconds(p.pid) for p in procs]
            time.sleep(0.6)
            assert all(_cpu_seconds(p.pid) > b for p, b in zip(procs, before))
    assert all(p.poll() is not None for p in procs)


def test_spinners_stop_on_error():
    with pytest.raises(RuntimeError, match="boom"):
        with busy(1) as procs:
            raise RuntimeError("boom")
    assert procs[0].poll() is not None


def test_spinners_end_by_themselves():
    with busy(1, seconds=0.3) as procs:
        procs[0].wait(timeout=10)
        assert procs[0].returncode == 0


def test_zero_spinners_and_bad_arguments():
    with busy(0) as procs:
        assert procs == []
    with pytest.raises(ValueError, match="k must be"):
        with busy(-1):
            pass
    with pytest.raises(ValueError, match="seconds must be"):
        with busy(1, seconds=0):
            pass
