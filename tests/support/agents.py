"""An agent server of a test's own, started off the event loop and always stopped."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from voice_agent.dev import servers


@contextlib.asynccontextmanager
async def agent_running(tts_url: str, **options: Any) -> AsyncIterator[servers.Server]:
    """``servers.start_agent_server(tts_url, **options)`` for the duration of the block."""
    agent = await asyncio.to_thread(servers.start_agent_server, tts_url, **options)
    try:
        yield agent
    finally:
        servers.stop(agent)
