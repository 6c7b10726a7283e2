"""``GET /diagnostics``, served only with ``VOICE_AGENT_DIAGNOSTICS=1``: what the agent process holds
right now, as JSON, for soak runs and leak checks on a local agent (AgentCore routes nothing but
``/invocations``, ``/ping`` and ``/ws`` to a deployed one).

``tasks``: asyncio tasks on the serving loop (this request's included); ``answers``: answers
running; ``conversations``: conversations kept; ``open_fds``: open file descriptors; ``rss_mb``:
resident memory."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from starlette.responses import JSONResponse


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return -1.0


async def diagnostics(request: Any) -> JSONResponse:
    pipeline = request.app.state.pipeline
    return JSONResponse({"tasks": len(asyncio.all_tasks()), "answers": pipeline.answers_running,
                         "conversations": len(pipeline.conversations), "open_fds": len(os.listdir("/proc/self/fd")),
                         "rss_mb": _rss_mb()})
