"""Relearning inside a running gateway: on a schedule or a signal, with an atomic swap.

:class:`Relearner` learns from the usage log in a background thread and assigns the new
index to ``gateway.index``. That assignment replaces one attribute: requests already
running finish on the index they started with, later ones get the new one, and none is
dropped or sees a mix. Learning always starts from the *base* index (the one the gateway
served before any learning, or the one the upstreams last put in after a catalogue
change), so retention and trust rules decide the learned state afresh each time and
never compound. Every learned version can be saved to its own directory (the last
``keep`` are kept); :meth:`Relearner.rollback` serves the previous one again.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .learner import REPORT_FILE, LearnConfig, LearnResult, learn
from .store import UsageLog

__all__ = ["GatewayLearning", "Relearner"]

log = logging.getLogger("toolsift.usage")

_VERSION = re.compile(r"learned-(\d{6})")


class Relearner:
    """Learns from usage and swaps the gateway's index, on demand, on a timer or a signal.

    Args:
        gateway: The :class:`~toolsift.gateway.Gateway` whose ``index`` is swapped.
        log: The usage log the gateway's recorder writes.
        config: Learning settings.
        every_s: Relearn this often once :meth:`start` ran (``None``: only on
            :meth:`trigger` / the signal).
        save_dir: Save each learned index to ``save_dir/learned-NNNNNN`` (optional).
        keep: Learned versions kept in ``save_dir`` (older ones are deleted).
        recorder: The gateway's :class:`~toolsift.usage.UsageRecorder`; flushed before
            learning and told the version label of each learned index.
    """

    def __init__(self, gateway: Any, log: UsageLog, *, config: LearnConfig | None = None,
                 every_s: float | None = None, save_dir: str | os.PathLike | None = None, keep: int = 3,
                 recorder: Any = None) -> None:
        if every_s is not None and (isinstance(every_s, bool) or not isinstance(every_s, (int, float))
                                    or every_s <= 0):
            raise ConfigError(f"relearn every_s must be a positive number or None, got {every_s!r}")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ConfigError(f"relearn keep must be an integer >= 1, got {keep!r}")
        self.gateway = gateway
        self.log = log
        self.config = config or LearnConfig()
        self.every_s = every_s
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self.keep = keep
        self.recorder = recorder
        self.last: LearnResult | None = None
        self.generation = 0
        self._base = gateway.index
        self._history: list[Any] = []  # indexes served before each swap, newest last
        self._served: Any = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ learning
    def relearn(self) -> LearnResult:
        """Learn now from the whole log and swap the result in (blocking; thread-safe)."""
        with self._lock:
            if self.recorder is not None:
                self.recorder.flush()
            current = self.gateway.index
            if current is not self._served:
                # Someone else (a catalogue sync) put a new index in: it is the new base.
                self._base = current
            result = learn(self._base, self.log, config=self.config)
            self.generation += 1
            version = f"learned-{self.generation:06d}"
            if self.save_dir is not None:
                self._save(result, version)
            if self.recorder is not None:
                self.recorder.label(result.index, version)
            self._history.append(current)
            del self._history[:-self.keep]
            self._served = result.index
            self.gateway.index = result.index  # the atomic swap
            self.last = result
            log.info("relearned %s: %d tool(s) gained examples; weights %s", version, len(result.added),
                     "retrained" if result.weights and result.weights.adopted else "unchanged")
            return result

    def rollback(self) -> bool:
        """Serve the index from before the last swap again; returns whether there was one."""
        with self._lock:
            if not self._history:
                return False
            previous = self._history.pop()
            self._served = previous if previous is not self._base else None
            self.gateway.index = previous
            return True

    def _save(self, result: LearnResult, version: str) -> None:
        import json

        assert self.save_dir is not None
        target = result.index.save(self.save_dir / version)
        (target / REPORT_FILE).write_text(json.dumps(result.to_dict(), indent=1, default=str), encoding="utf-8")
        versions = sorted(p for p in self.save_dir.iterdir() if _VERSION.fullmatch(p.name))
        for old in versions[:-self.keep]:
            shutil.rmtree(old, ignore_errors=True)

    # ---------------------------------------------------------- schedule / signal
    def trigger(self) -> None:
        """Ask the background thread to relearn now (safe from a signal handler)."""
        self._wake.set()

    def install_signal(self, signum: int = getattr(signal, "SIGHUP", 1)) -> None:
        """Relearn when the process receives ``signum`` (default SIGHUP; main thread only)."""
        signal.signal(signum, lambda *_: self.trigger())

    def start(self) -> None:
        """Start the background thread (relearns every ``every_s`` and on :meth:`trigger`)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="toolsift-relearn", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread (a relearn in progress finishes first)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.every_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.relearn()
            except Exception:  # a failed relearn keeps the served index; try again later
                log.exception("relearning from usage failed; the served index is unchanged")

    def __enter__(self) -> Relearner:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class GatewayLearning:
    """Usage recording and relearning for a served gateway, as one object to pass in.

    ``toolsift serve --usage usage.db [--relearn-every S]`` builds one; the runtime
    gives its :attr:`recorder` to the :class:`~toolsift.gateway.Gateway`, calls
    :meth:`attach` once the gateway exists and :meth:`close` at shutdown. SIGHUP
    triggers a relearn when the gateway runs in the main thread.

    Args:
        path: The usage log file.
        every_s: Relearn period (``None``: only on SIGHUP / :meth:`Relearner.trigger`).
        save_dir: Where learned versions are saved (optional).
        config: Learning settings.
    """

    def __init__(self, path: str | os.PathLike, *, every_s: float | None = None,
                 save_dir: str | os.PathLike | None = None, config: LearnConfig | None = None) -> None:
        from .recorder import UsageRecorder

        self.recorder = UsageRecorder(os.fspath(path))
        self.every_s = every_s
        self.save_dir = save_dir
        self.config = config
        self.relearner: Relearner | None = None

    def attach(self, gateway: Any) -> Relearner:
        """Start relearning for ``gateway`` (its recorder must be :attr:`recorder`)."""
        self.relearner = Relearner(gateway, self.recorder.log, config=self.config, every_s=self.every_s,
                                   save_dir=self.save_dir, recorder=self.recorder)
        self.relearner.start()
        try:
            self.relearner.install_signal()
        except (ValueError, OSError):  # not the main thread, or no SIGHUP on this platform
            log.info("relearn signal not installed (not the main thread)")
        return self.relearner

    def close(self) -> None:
        """Stop relearning and write what the recorder still holds."""
        if self.relearner is not None:
            self.relearner.stop()
        self.recorder.close()
