"""Tiers, and the real servers the whole run shares: one TTS server (the model loads once) and one
agent server per recording, started lazily, all on loopback, logs kept under test-artifacts/.

The fast tier is ``tests/unit`` and ``tests/asgi`` (no server, no model: ``pytest -m "not slow"``);
every other test is marked ``slow`` here, by where it lives."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from voice_agent.dev import servers

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

# In CI the property tests replay the same examples every run; locally they explore new ones.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


FAST_TIERS = ("unit", "asgi")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.path)).parent.name not in FAST_TIERS:
            item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # The SDK's CRT client leaves a failed internal task behind for every stream the service
    # refused (the retry tests provoke that on purpose); collect it now so its log line is printed
    # before the test summary rather than after it.
    gc.collect()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def tts_server(artifacts: Path) -> Iterator[servers.Server]:
    with servers.running(servers.start_tts_server(log_path=str(artifacts / "tts-server.log"))) as server:
        yield server


@pytest.fixture(scope="session")
def agent_server(tts_server: servers.Server, artifacts: Path) -> Iterator[Callable[[str], servers.Server]]:
    """``agent_server("long")``: the agent replaying that recording at its recorded pace."""
    started: dict[str, servers.Server] = {}

    def get(recording: str) -> servers.Server:
        if recording not in started:
            started[recording] = servers.start_agent_server(
                tts_server.ws_url, replay=recording, log_path=str(artifacts / f"agent-{recording}.log"))
        return started[recording]

    yield get
    for server in started.values():
        servers.stop(server)


@pytest.fixture(scope="session")
def sagemaker_stand_in(tts_server: servers.Server, artifacts: Path) -> Iterator[tuple[servers.Server, Path]]:
    """The local SageMaker stand-in in front of the shared TTS server, and the CA to trust."""
    tls_dir = artifacts / "sagemaker-tls"
    server = servers.start_sagemaker_local(tts_server.ws_url, str(tls_dir),
                                           log_path=str(artifacts / "sagemaker-local.log"))
    with servers.running(server):
        yield server, tls_dir / "ca.pem"
