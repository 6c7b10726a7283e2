"""Start and stop the two local servers as subprocesses, and wait until they are healthy."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from tts_server.app import BIDI_PATH

DEFAULT_TTS_START_TIMEOUT = 300.0
"""Seconds the TTS server may take to become healthy: the first start assembles and verifies the
92 MB model, then loads it and runs a warm-up synthesis."""
DEFAULT_AGENT_START_TIMEOUT = 60.0


class ServerStartError(RuntimeError):
    pass


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen[bytes]

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def https_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{BIDI_PATH}"


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
    environment = {**os.environ, **(env or {})}
    if log_path:
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=environment)
    else:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment)
    server = Server(name, port, process)
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
        if server.process.poll() is not None:
            raise ServerStartError(f"{server.name} server exited with code {server.process.returncode}")
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
                          timeout: float = DEFAULT_AGENT_START_TIMEOUT, log_path: str | None = None) -> Server:
    """The local SageMaker stand-in in front of ``container_url``; it trusts ``tls_dir/ca.pem``."""
    return _start("SageMaker stand-in", ["sagemaker-local", "--container-url", container_url, "--tls-dir", tls_dir],
                  port or free_port(), timeout, log_path, None, accepts_connections)


def start_bedrock_local(replay: str, port: int | None = None, *, replay_speed: float = 1.0,
                        timeout: float = DEFAULT_AGENT_START_TIMEOUT, log_path: str | None = None) -> Server:
    """The local Bedrock ConverseStream stand-in, streaming the recording ``replay``."""
    return _start("Bedrock stand-in", ["bedrock-local", "--replay", replay, "--replay-speed", str(replay_speed)],
                  port or free_port(), timeout, log_path, None, accepts_connections)


def stop(server: Server, timeout: float = 10.0) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


@contextlib.contextmanager
def running(server: Server) -> Iterator[Server]:
    try:
        yield server
    finally:
        stop(server)
