"""The process tree as Linux ``/proc`` shows it: one walk, shared by the leak check
(tests/_leaks.py) and the tests that look at a server's workers (tests/_procs.py users).

Everything here reads ``/proc`` and returns an empty answer (or ``None``) for a process
that is gone, so a process exiting mid-walk is never an error.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["alive", "children", "cmdline", "descendants", "ppid", "stat"]


def stat(pid: int) -> tuple[str, str] | None:
    """``(state, command name)`` of ``pid``, or ``None`` if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.find("(") + 1:text.rfind(")")]
    return text.rsplit(")", 1)[1].split()[0], name


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    st = stat(pid)
    return st is not None and st[0] != "Z"


def ppid(pid: int) -> int | None:
    """The parent of ``pid``, or ``None`` if it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def children(pid: int) -> list[int]:
    """The direct child processes of ``pid`` (those of every one of its threads)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return out


def descendants(pid: int | None = None) -> set[int]:
    """Running (not zombie) processes below ``pid`` (this process by default)."""
    root = os.getpid() if pid is None else pid
    seen: set[int] = set()
    todo = [root]
    while todo:
        for child in children(todo.pop()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return {p for p in seen if alive(p)}


def cmdline(pid: int) -> str:
    """The command line of ``pid`` (``?`` if it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
