"""The reliability suite's own TTS server, with a session limit low enough to reach on loopback.
Every test here is bounded (counts and timeouts), loopback only, and prints what it tried."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from voice_agent.bench.reliability import MAX_SESSIONS
from voice_agent.dev import servers


@pytest.fixture(scope="session")
def limited_tts(artifacts: Path) -> Iterator[servers.Server]:
    server = servers.start_tts_server(extra_args=["--max-sessions", str(MAX_SESSIONS)],
                                      log_path=str(artifacts / "tts-limited.log"))
    with servers.running(server):
        yield server
