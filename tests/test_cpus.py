"""threads=0 means the CPUs this process may use: affinity capped by the cgroup quota."""

from __future__ import annotations

import os

import pytest

from toolsift.cpus import available_cpus, cgroup_quota
from toolsift.kernels.launch import current_threads, using_threads


def test_available_cpus_respects_affinity():
    n = available_cpus()
    assert n >= 1
    if hasattr(os, "sched_getaffinity"):
        assert n <= len(os.sched_getaffinity(0))
    with using_threads(0):
        assert current_threads() == n


def test_cgroup_v2_quota(tmp_path):
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "cpu.max").write_text("150000 100000\n")
    assert cgroup_quota(tmp_path, "0::/box\n") == pytest.approx(1.5)
    (tmp_path / "box" / "cpu.max").write_text("max 100000\n")
    assert cgroup_quota(tmp_path, "0::/box\n") is None
    (tmp_path / "box" / "cpu.max").write_text("lots 100000\n")
    assert cgroup_quota(tmp_path, "0::/box\n") is None
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    assert cgroup_quota(tmp_path, "0::/elsewhere\n") == pytest.approx(2.0)


def test_cgroup_v1_quota(tmp_path):
    job = tmp_path / "cpu" / "job"
    job.mkdir(parents=True)
    (job / "cpu.cfs_quota_us").write_text("50000\n")
    (job / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_quota(tmp_path, "4:memory:/x\n3:cpu,cpuacct:/job\n") == pytest.approx(0.5)
    (job / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_quota(tmp_path, "3:cpu,cpuacct:/job\n") is None
    assert cgroup_quota(tmp_path / "nothing", "") is None


def test_quota_caps_available_cpus(monkeypatch):
    import toolsift.cpus as cpus

    monkeypatch.setattr(cpus, "cgroup_quota", lambda: 0.5)
    assert cpus.available_cpus() == 1
    monkeypatch.setattr(cpus, "cgroup_quota", lambda: None)
    assert cpus.available_cpus() == cpus._affinity()
