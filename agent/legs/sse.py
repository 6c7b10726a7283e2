"""Leg 1 over HTTP: an answer as ``text/event-stream``, one ``data: {json}`` block per event (audio
as Base64), stopped the moment the caller goes away."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse

from caller_protocol import events


class EventStream(StreamingResponse):
    """An answer as ``text/event-stream``: one ``data: {json}`` block per event (audio as Base64),
    the same bytes the runtime writes for a handler that yields dicts.

    It exists because the caller going away must stop the answer at once. For a generator handler
    the runtime bridges the answer through a thread and a queue, and a disconnect left the
    answer running (model and TTS session included) until the next garbage collection; measured
    here, that was the next request. This response watches for ``http.disconnect`` itself and
    closes the answer the moment it arrives.
    """

    def __init__(self, answer: AsyncIterator[dict[str, Any]]) -> None:
        super().__init__(answer, media_type="text/event-stream")
        self._answer = answer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def stream() -> None:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for event in self._answer:
                await send({"type": "http.response.body", "body": events.to_sse(event), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def caller_gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        streaming = asyncio.create_task(stream(), name="sse-answer")
        watching = asyncio.create_task(caller_gone(), name="sse-disconnect")
        try:
            await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (watching, streaming):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self._answer.aclose()
        if not streaming.cancelled() and streaming.exception() is not None:
            raise streaming.exception()


async def one_event(event: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    """An answer of one event (a refused request's error)."""
    yield event
