"""Child processes: how one ended, in words, and ending with the parent that started it."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Mapping

log = logging.getLogger(__name__)

PARENT_FD_VARIABLE = "VOICE_AGENT_PARENT_FD"
"""Names a pipe's read end that a child inherits; its write end stays with the parent only."""
EXIT_GRACE = 10.0
"""Seconds a child whose parent has gone may take to shut down cleanly before it exits hard."""


def exit_description(returncode: int | None) -> str:
    """How a process ended, in words: ``killed by signal SIGSEGV`` or ``exited with status 1``."""
    if returncode is None:
        return "is still running"
    if returncode < 0:
        try:
            return f"was killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def exit_with_parent() -> None:
    """In a child started with :data:`PARENT_FD_VARIABLE`: end this process when the parent ends.

    The kernel closes the parent's write end of the pipe however the parent ends (normally, by
    an exception, SIGKILL, a segmentation fault), so the read below returns at once. The child
    then stops as if sent SIGTERM (servers shut down cleanly) and exits hard after
    :data:`EXIT_GRACE` seconds if that did not end it."""
    value = os.environ.pop(PARENT_FD_VARIABLE, None)
    if not value:
        return
    fd = int(value)

    def watch() -> None:
        while os.read(fd, 1):
            pass
        log.warning("the parent process has gone: shutting down")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(EXIT_GRACE)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class Tie:
    """What a child needs to end with this process: start it with :attr:`env` and :attr:`pass_fds`
    (the child must call :func:`exit_with_parent`, as ``voice-agent`` and ``agent.entrypoint`` do),
    and :meth:`close` once the child has ended (or use ``with``). The pipe's write end is never
    inherited, so only this process's end (by :meth:`close`, or by the kernel when it dies, however
    it dies) ends the child."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._read, self._write = os.pipe()
        self.env = {**(os.environ if env is None else env), PARENT_FD_VARIABLE: str(self._read)}
        self.pass_fds = (self._read,)

    def close(self) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass  # already closed

    def __enter__(self) -> Tie:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
