"""Index generations across processes (issue 24, item 7): a slow reader racing a fast
writer never loses the generation it is opening (reader leases), and old generations
are deleted once no reader needs them. Processes, not threads."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

from toolsift import ToolIndex

pytestmark = pytest.mark.skipif(os.name != "posix", reason="leases use flock (POSIX)")

QUERY = "send an email to my manager"


def _writer(src: str, target: str, saves: int, done) -> None:
    index = ToolIndex.load(src, mmap=False)
    for _ in range(saves):
        index.save(target)
    done.set()


def _slow_reader(target: str, done, out) -> None:
    """Load over and over, each file opened 30 ms late (a slow disk or a busy machine),
    until the writer is done; report loads and failures."""
    import toolsift.index.persist as persist

    real = persist.open_table

    def slow(*args, **kwargs):
        time.sleep(0.03)
        return real(*args, **kwargs)

    persist.open_table = slow
    loads, failures = 0, []
    while not done.is_set() or loads == 0:
        try:
            index = ToolIndex.load(target)
            assert index.search(QUERY, k=3)[0].id
            loads += 1
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            failures.append(f"{type(exc).__name__}: {exc}")
    out.put((loads, failures))


def test_slow_readers_in_processes_never_lose_their_generation(tmp_path, demo_index):
    src = demo_index.save(tmp_path / "src")
    target = tmp_path / "live"
    demo_index.save(target)
    ctx = mp.get_context("spawn")
    done, out = ctx.Event(), ctx.Queue()
    readers = [ctx.Process(target=_slow_reader, args=(str(target), done, out)) for _ in range(2)]
    for r in readers:
        r.start()
    writer = ctx.Process(target=_writer, args=(str(src), str(target), 40, done))
    writer.start()
    writer.join(timeout=300)
    results = [out.get(timeout=300) for _ in readers]
    for r in readers:
        r.join(timeout=60)
    assert writer.exitcode == 0
    failures = [f for _, fs in results for f in fs]
    assert not failures, failures[:3]
    assert all(loads >= 1 for loads, _ in results)
    # Nobody reads now: the next save deletes every older generation.
    demo_index.save(target)
    gens = [p.name for p in target.iterdir() if p.is_dir()]
    assert len(gens) == 1, gens
    assert ToolIndex.load(target).search(QUERY, k=1)[0].id


def _hold(target: str, ready, release) -> None:
    """Open the current generation's lease and keep it (a reader in the middle of a load)."""
    from toolsift.index.store import leased_manifest

    with leased_manifest(target, verify=False) as (_, ddir):
        ready.put(ddir.name)
        release.wait(60)


def test_generation_under_a_lease_survives_saves_and_goes_later(tmp_path, demo_index):
    target = tmp_path / "live"
    demo_index.save(target)
    ctx = mp.get_context("spawn")
    ready, release = ctx.Queue(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(target), ready, release))
    holder.start()
    leased = ready.get(timeout=120)
    for _ in range(3):
        demo_index.save(target)
    gens = sorted(p.name for p in target.iterdir() if p.is_dir())
    assert leased in gens and len(gens) == 2  # the leased one and the newest; the others went
    assert all((target / leased / name).exists() for name in ("tools.arrow", "manifest.json"))
    release.set()
    holder.join(timeout=60)
    demo_index.save(target)
    assert leased not in [p.name for p in target.iterdir()]


def test_lease_of_a_killed_reader_is_released(tmp_path, demo_index):
    target = tmp_path / "live"
    demo_index.save(target)
    ctx = mp.get_context("spawn")
    ready, release = ctx.Queue(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(target), ready, release))
    holder.start()
    leased = ready.get(timeout=120)
    holder.kill()
    holder.join(timeout=60)
    demo_index.save(target)
    assert leased not in [p.name for p in target.iterdir()]
    assert Path(target / "manifest.json").is_file()
