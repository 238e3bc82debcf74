"""How many CPUs this process may actually use.

``os.cpu_count()`` counts the machine's cores; a container or a ``taskset`` may allow
far fewer. ``threads=0`` ("all cores") means the cores this process can run on (its CPU
affinity) capped by its cgroup CPU quota (``cpu.max`` in cgroup v2, ``cpu.cfs_quota_us``
/ ``cpu.cfs_period_us`` in v1), rounded up. The C++ engine computes the same number
(cpp/src/cpus.cpp).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["available_cpus", "cgroup_quota"]

_CGROUP = Path("/sys/fs/cgroup")


def _affinity() -> int:
    getaff = getattr(os, "sched_getaffinity", None)
    if getaff is not None:
        try:
            return max(1, len(getaff(0)))
        except OSError:  # some sandboxes refuse the call: fall back to the core count
            pass
    return os.cpu_count() or 1


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def cgroup_quota(root: Path = _CGROUP, membership: str | None = None) -> float | None:
    """CPUs allowed by the process's cgroup CPU quota (fractional), or None if unlimited
    or unknown.

    Args:
        root: Where the cgroup file systems are mounted.
        membership: The text of ``/proc/self/cgroup`` (read when None).
    """
    if membership is None:
        membership = _read(Path("/proc/self/cgroup")) or ""
    v2_dirs: list[Path] = []
    v1_dirs: list[Path] = []
    for line in membership.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        rel = parts[2].lstrip("/")
        if parts[0] == "0" and parts[1] == "":  # cgroup v2 unified hierarchy
            v2_dirs.append(root / rel)
        elif "cpu" in parts[1].split(","):
            v1_dirs += [root / "cpu" / rel, root / "cpu,cpuacct" / rel]
    for d in [*v2_dirs, root]:
        text = _read(d / "cpu.max")
        if text:
            fields = text.split()
            return _ratio(fields[0], fields[1]) if len(fields) == 2 and fields[0] != "max" else None
    for d in [*v1_dirs, root / "cpu", root / "cpu,cpuacct"]:
        quota, period = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
        if quota and period:
            return _ratio(quota, period)
    return None


def available_cpus() -> int:
    """CPUs this process may use: its affinity, capped by its cgroup quota (at least 1)."""
    n = _affinity()
    quota = cgroup_quota()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    return n
