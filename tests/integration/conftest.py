from __future__ import annotations

import pytest

from tts_server.engine import KokoroEngine


@pytest.fixture(scope="session")
def engine() -> KokoroEngine:
    """The packaged model, loaded once for the tests that run it in process (not through a server)."""
    return KokoroEngine.load(threads=2)
