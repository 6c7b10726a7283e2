"""Leg 1 over the WebSocket ``/ws``: JSON control and events as text messages, audio as binary
frames, no Base64 (the messages are ``caller_protocol``'s).

The asks of one connection continue one conversation (the AgentCore session's, when the runtime
names one). A message that cannot be read gets an ``error`` event with a null ``seq`` and the
connection goes on; an ``ask`` while an answer streams barges in on it. A ``cancel`` or ``ask``
that says where the caller's playback stopped (``played_ms``) cuts the conversation to what was
heard, whether the answer is still streaming or has completed (its audio arrives faster than it
plays, so a listener usually interrupts after its ``end``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from typing import Any

from starlette.websockets import WebSocket

from agent.pipeline import BargeIn, VoicePipeline
from caller_protocol import (
    Ask,
    RequestError,
    UnreadableMessage,
    VoiceRequest,
    checked_session_id,
    events,
    parse_ws_message,
)

log = logging.getLogger(__name__)

POLICY_VIOLATION = 1008
"""The close code for a connection refused as a whole (an unusable session id)."""
STOP_TIMEOUT = 5.0
"""Seconds a barged-in answer may take to send its last event before it is cut off."""


class WebSocketCaller:
    """One ``/ws`` connection: reads ``ask`` and ``cancel``, streams each answer's events."""

    def __init__(self, websocket: WebSocket, pipeline: VoicePipeline, session_id: str | None) -> None:
        self._websocket = websocket
        self._pipeline = pipeline
        self._header_session_id = session_id
        self._session_id = f"ws-{uuid.uuid4().hex}"
        self._send_lock = asyncio.Lock()
        self._answer: asyncio.Task[None] | None = None
        self._cancel = BargeIn()

    async def run(self) -> None:
        await self._websocket.accept()
        try:
            self._session_id = checked_session_id(self._header_session_id) or self._session_id
        except RequestError as exc:  # refused before any answer: one error, then the connection closes
            await self._send({**events.error(events.INVALID_REQUEST, str(exc)), "seq": None})
            await self._websocket.close(code=POLICY_VIOLATION)
            return
        try:
            while True:
                message = await self._websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                await self._handle(message.get("text") if message.get("text") is not None else message.get("bytes"))
        finally:
            if self._answer is not None and not self._answer.done():
                self._answer.cancel()  # the caller is gone: nothing more can be sent to it
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._answer

    async def _handle(self, data: str | bytes | None) -> None:
        try:
            message = parse_ws_message(data)
        except UnreadableMessage as exc:
            await self._send({**events.error(events.INVALID_REQUEST, str(exc)), "seq": None})
            return
        except RequestError as exc:  # an ask, refused: it still barges in on the current answer
            await self._stop_answer()
            await self._send({**events.error(events.INVALID_REQUEST, str(exc)), "seq": 0})
            return
        await self._stop_answer(message.played_ms)
        if message.played_ms is not None:  # also for an answer that had completed before the caller stopped it
            await self._pipeline.played(self._session_id, message.played_ms)
        if isinstance(message, Ask):
            self._cancel = BargeIn()
            self._answer = asyncio.create_task(self._stream(message.request, self._cancel), name="ws-answer")

    async def _stream(self, request: VoiceRequest, cancel: BargeIn) -> None:
        async with contextlib.aclosing(self._pipeline.answer(request, self._session_id, cancel)) as answer:
            async for event in answer:
                if event["type"] == events.AUDIO:
                    header, data = events.split_audio(event)
                    await self._send(header, data)
                else:
                    await self._send(event)

    async def _stop_answer(self, played_ms: float | None = None) -> None:
        """Barge in on the current answer (``played_ms``: how much of it the caller played) and
        wait until it has sent its last event."""
        if self._answer is None or self._answer.done():
            return
        self._cancel.interrupt(played_ms)
        try:
            await asyncio.wait_for(asyncio.shield(self._answer), STOP_TIMEOUT)
        except TimeoutError:
            self._answer.cancel()
        except Exception:  # the caller went away mid-send: nothing more to tell it
            log.debug("answer ended while stopping it", exc_info=True)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._answer

    async def _send(self, event: dict[str, Any], data: bytes | None = None) -> None:
        async with self._send_lock:  # an audio header and its frame stay together
            await self._websocket.send_text(json.dumps(event, ensure_ascii=False))
            if data is not None:
                await self._websocket.send_bytes(data)
