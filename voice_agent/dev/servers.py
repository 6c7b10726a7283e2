"""Start and stop the local servers as subprocesses, wait until they are healthy, and tell the user
plainly when one dies.

Every server started here ends with the process that started it, however that process ends (see
``agent.processes.exit_with_parent``): a test run or a demo that crashes leaves nothing running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from agent.processes import Tie, exit_description
from tts_protocol import BIDI_PATH

T = TypeVar("T")

DEFAULT_TTS_START_TIMEOUT = 300.0
"""Seconds the TTS server may take to become healthy: the first start assembles and verifies the
92 MB model, then loads it and runs a warm-up synthesis."""
DEFAULT_AGENT_START_TIMEOUT = 60.0


LOG_TAIL_LINES = 12
"""Lines of a dead server's log shown to the user."""
DEATH_GRACE = 2.0
"""Seconds to wait, after a connection to a server broke, for the server's exit to become visible:
the broken connection is seen before the process can be collected (measured: under 0.1 s)."""


class ServerStartError(RuntimeError):
    pass


class ServerDied(RuntimeError):
    """A server this process started ended on its own; the message names it, how it ended, and the
    end of its log."""

    def __init__(self, server: Server, when: str = "") -> None:
        self.server = server
        super().__init__(death_report(server, when))


def death_report(server: Server, when: str = "") -> str:
    """``the agent server (pid 12) was killed by signal SIGSEGV; last lines of out/agent.log:`` and
    those lines, indented."""
    where = f"; last lines of {server.log_path}:" if server.log_path else ""
    tail = "".join(f"\n  {line}" for line in server.log_tail())
    return (f"the {server.name} server (pid {server.process.pid}) {exit_description(server.process.returncode)}"
            f"{when}{where}{tail}")


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: str | None = None
    tie: Tie | None = field(default=None, repr=False)
    """Ends the server with this process (``agent.processes``)."""

    def __post_init__(self) -> None:
        self.http_url = f"http://127.0.0.1:{self.port}"
        self.https_url = f"https://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}{BIDI_PATH}"
        """The TTS container's bidirectional stream, when the server is one."""

    def died(self) -> bool:
        return self.process.poll() is not None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        if not self.log_path:
            return []
        try:
            text = Path(self.log_path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return text.splitlines()[-lines:]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ping_ok(server: Server) -> bool:
    with contextlib.suppress(OSError, urllib.error.URLError):
        with urllib.request.urlopen(f"{server.http_url}/ping", timeout=2) as response:
            return response.status == 200
    return False


def accepts_connections(server: Server) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", server.port), timeout=2):
        return True
    return False


def _start(name: str, args: Sequence[str], port: int, timeout: float, log_path: str | None,
           progress: Callable[[str], None] | None, probe: Callable[[Server], bool] = ping_ok,
           env: Mapping[str, str] | None = None) -> Server:
    command = [sys.executable, "-m", "voice_agent.cli", *args, "--host", "127.0.0.1", "--port", str(port)]
    tie = Tie({**os.environ, **(env or {})})
    try:
        with open(log_path or os.devnull, "ab") as log_file:
            process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=tie.env,
                                       pass_fds=tie.pass_fds)
    except BaseException:
        tie.close()
        raise
    server = Server(name, port, process, log_path, tie)
    try:
        wait_healthy(server, timeout, progress, probe)
    except BaseException:
        stop(server)
        raise
    return server


def wait_healthy(server: Server, timeout: float, progress: Callable[[str], None] | None = None,
                 probe: Callable[[Server], bool] = ping_ok) -> None:
    deadline = time.monotonic() + timeout
    last_report = 0.0
    while time.monotonic() < deadline:
        if server.died():
            raise ServerStartError(death_report(server, " while starting"))
        if probe(server):
            return
        if progress and time.monotonic() - last_report > 5:
            progress(f"waiting for the {server.name} server on port {server.port} to become healthy...")
            last_report = time.monotonic()
        time.sleep(0.2)
    raise ServerStartError(f"{server.name} server not healthy within {timeout:.0f} s")


def start_tts_server(port: int | None = None, *, timeout: float = DEFAULT_TTS_START_TIMEOUT,
                     log_path: str | None = None, progress: Callable[[str], None] | None = None,
                     extra_args: Sequence[str] = ()) -> Server:
    return _start("TTS", ["serve-tts", *extra_args], port or free_port(), timeout, log_path, progress)


def start_agent_server(tts_url: str, port: int | None = None, *, replay: str | None = None,
                       replay_speed: float | None = None, model: str | None = None,
                       timeout: float = DEFAULT_AGENT_START_TIMEOUT,
                       log_path: str | None = None, progress: Callable[[str], None] | None = None,
                       env: Mapping[str, str] | None = None) -> Server:
    """The agent; ``env`` adds configuration (``agent.config``), e.g. a SageMaker endpoint."""
    args = ["serve-agent", "--tts-url", tts_url]
    if replay is not None:
        args += ["--replay", replay]
    if replay_speed is not None:
        args += ["--replay-speed", str(replay_speed)]
    if model is not None:
        args += ["--model", model]
    return _start("agent", args, port or free_port(), timeout, log_path, progress, env=env)


def start_sagemaker_local(container_url: str, tls_dir: str, port: int | None = None, *,
                          timeout: float = DEFAULT_AGENT_START_TIMEOUT, log_path: str | None = None,
                          faults: Sequence[str] = ()) -> Server:
    """The local SageMaker stand-in in front of ``container_url``; it trusts ``tls_dir/ca.pem``.
    ``faults`` are its fault options (``--throttle-first N``, ``--reset-after-parts N``, ...)."""
    return _start("SageMaker stand-in", ["sagemaker-local", "--container-url", container_url, "--tls-dir", tls_dir,
                                         *faults], port or free_port(), timeout, log_path, None, accepts_connections)


def start_bedrock_local(replay: str, port: int | None = None, *, replay_speed: float = 1.0,
                        timeout: float = DEFAULT_AGENT_START_TIMEOUT, log_path: str | None = None,
                        faults: Sequence[str] = ()) -> Server:
    """The local Bedrock ConverseStream stand-in, streaming the recording ``replay``; ``faults`` are
    its fault options (``--throttle-first N``, ``--fail-after N``)."""
    return _start("Bedrock stand-in", ["bedrock-local", "--replay", replay, "--replay-speed", str(replay_speed),
                                       *faults], port or free_port(), timeout, log_path, None, accepts_connections)


def stop(server: Server, timeout: float = 10.0) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
    if server.tie is not None:
        server.tie.close()


@contextlib.contextmanager
def running(server: Server) -> Iterator[Server]:
    try:
        yield server
    finally:
        stop(server)


async def supervised(work: Awaitable[T], watched: Sequence[Server],
                     symptoms: tuple[type[BaseException], ...] = (Exception,), poll: float = 0.1) -> T:
    """Await ``work`` while watching the servers it depends on. When one of them dies, ``work`` is
    cancelled and :class:`ServerDied` names the server. When ``work`` fails with one of
    ``symptoms`` (a broken connection is usually seen a few milliseconds before the process that
    broke it can be collected), the death is waited for up to :data:`DEATH_GRACE` seconds and
    reported rather than the symptom; other failures are raised at once."""
    task = asyncio.ensure_future(work)
    try:
        while not task.done():
            _raise_if_dead(watched)
            await asyncio.wait([task], timeout=poll)
        try:
            return task.result()
        except symptoms:
            deadline = time.monotonic() + DEATH_GRACE
            while time.monotonic() < deadline:
                _raise_if_dead(watched)
                await asyncio.sleep(poll)
            raise
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _raise_if_dead(watched: Sequence[Server]) -> None:
    for server in watched:
        if server.died():
            raise ServerDied(server, " during the answer")
