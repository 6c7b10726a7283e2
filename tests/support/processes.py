"""Processes as the tests see them through /proc: a process's children, and whether one has gone."""

from __future__ import annotations

import time
from pathlib import Path


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (every thread's children)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def child_running(pid: int, marker: str) -> int:
    """The one child of ``pid`` whose command line contains ``marker``."""
    matches = [child for child in children(pid) if marker in command_line(child)]
    assert len(matches) == 1, f"children of {pid} running {marker!r}: {matches}"
    return matches[0]


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for a parent to collect it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
