"""A Docker engine to build and run the images: the one already running, or one this process starts
(as root, Debian's ``docker.io``) and that ends with it.

Every process started here is tied to this one by the kernel (``PR_SET_PDEATHSIG``): an engine this
process started shuts down (stopping its containers) and an attached ``docker run`` client stops its
container (it forwards the signal) when this process ends, however it ends."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DOCKERD_ARGS = ("--iptables=false", "--bridge=none")
"""A sandboxed machine may allow neither iptables nor a bridge; every container here runs with
``--network host``. The storage driver is the engine's own choice (overlay2 where the kernel allows
it, else vfs, which copies each layer whole and builds several times slower)."""
ENGINE_START_TIMEOUT = 60.0
"""Seconds for a started engine to answer ``docker info`` (about 2 s here)."""
COMMAND_TIMEOUT = 120.0
"""Seconds for a short docker command (inspect, stop, rm) before it counts as hung."""
_PR_SET_PDEATHSIG = 1


class EngineUnavailable(RuntimeError):
    """No Docker engine runs here and none could be started; the message says why, in one line."""


def end_with_this_process() -> None:
    """In a child between fork and exec: the kernel sends it SIGTERM when the thread that started it
    ends. (Start such children from the main thread, which lives as long as the process.)"""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Engine:
    client: str
    """The ``docker`` command."""
    description: str
    """How this engine came to be, for the user: found running, or started (and how)."""
    process: subprocess.Popen[bytes] | None = None
    """The engine this process started, if it did."""

    def docker(self, *args: str, timeout: float = COMMAND_TIMEOUT, check: bool = True,
               input: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``docker ARGS`` with its output captured; raises ``CalledProcessError`` (with the output)
        on failure when ``check``, ``TimeoutExpired`` after ``timeout`` seconds."""
        result = subprocess.run([self.client, *args], capture_output=True, timeout=timeout, input=input,
                                env=docker_environment(), cwd=cwd)
        completed = subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(errors="replace"),
                                                result.stderr.decode(errors="replace"))
        if check and completed.returncode != 0:
            raise subprocess.CalledProcessError(completed.returncode, completed.args, completed.stdout,
                                                completed.stderr)
        return completed

    def info(self, field: str) -> str:
        return self.docker("info", "--format", "{{." + field + "}}").stdout.strip()

    def image_exists(self, name: str) -> bool:
        return self.docker("image", "inspect", name, check=False).returncode == 0

    def stop(self) -> None:
        """Stop the engine if this process started it (it stops its containers first)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def docker_environment() -> dict[str, str]:
    """The client's environment: the classic builder (Debian's engine has no BuildKit, and the
    Dockerfiles are written for both)."""
    return {**os.environ, "DOCKER_BUILDKIT": "0"}


def _answers(client: str) -> bool:
    try:
        return subprocess.run([client, "info"], capture_output=True, timeout=30,
                              env=docker_environment()).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def ensure_engine(log_path: Path, timeout: float = ENGINE_START_TIMEOUT) -> Engine:
    """The running engine, else one started now (root only); raises :class:`EngineUnavailable`."""
    client = shutil.which("docker")
    if client is None:
        raise EngineUnavailable("no docker command (install Docker, or Debian's docker.io as root)")
    if _answers(client):
        return Engine(client, "a Docker engine was already running")
    daemon = shutil.which("dockerd")
    if daemon is None:
        raise EngineUnavailable("no Docker engine is running and there is no dockerd to start one")
    if os.geteuid() != 0:
        raise EngineUnavailable("no Docker engine is running, and starting one needs root")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        process = subprocess.Popen([daemon, *DOCKERD_ARGS], stdout=log, stderr=subprocess.STDOUT,
                                   preexec_fn=end_with_this_process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise EngineUnavailable(f"dockerd exited with status {process.returncode} at start "
                                    f"({_last_line(log_path)}; log: {log_path})")
        if _answers(client):
            engine = Engine(client, "", process)
            engine.description = (f"started dockerd {' '.join(DOCKERD_ARGS)} (pid {process.pid}, storage driver "
                                  f"{engine.info('Driver')}, log {log_path}); it stops when this command ends")
            return engine
        time.sleep(0.5)
    process.kill()
    process.wait()
    raise EngineUnavailable(f"dockerd did not answer within {timeout:.0f} s (log: {log_path})")


def _last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no output"


def start_attached(engine: Engine, arguments: Sequence[str], log_path: Path,
                   env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``docker ARGUMENTS`` (a ``run`` without ``-d``) as a child whose output goes to ``log_path``;
    ``env`` adds to its environment. Signals to it reach the container (the client forwards them),
    and it ends with this process."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen([engine.client, *arguments], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**docker_environment(), **(env or {})},
                                preexec_fn=end_with_this_process)
