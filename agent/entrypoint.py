"""The AgentCore-hosted agent: ``BedrockAgentCoreApp`` serving ``POST /invocations`` on port 8080.

The payload is ``{"prompt": str, "mode": "incremental"|"batch", "voice"?: str, "speed"?: float}``;
the answer streams back as ``text/event-stream``, one ``agent.events`` dict per ``data:`` line.
The WebSocket ``/ws`` is the binary caller leg (:class:`WebSocketCaller`); ``GET /`` serves a
browser client that uses it.
Configuration comes from the environment (``agent.config``). Run it with
``voice-agent serve-agent`` or, as AgentCore does in the container, ``python -m agent.entrypoint``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import importlib.resources
import json
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp, RequestContext
from starlette.responses import HTMLResponse, JSONResponse, StreamingResponse
from starlette.websockets import WebSocket

from agent import events
from agent.chunker import SentenceChunker
from agent.config import AgentSettings
from agent.models import build_model, model_kind
from agent.pipeline import RequestError, VoicePipeline, VoiceRequest
from agent.tts_client import Connect, TTSSession

log = logging.getLogger(__name__)

MAX_PAYLOAD_BYTES = 64 * 1024
"""Largest request body on /invocations, and largest message on /ws: a 4,000-character prompt is at
most about 24 KB of JSON. Bigger bodies get HTTP 413 before they are buffered; bigger WebSocket
messages close that connection with 1009."""
STOP_TIMEOUT = 5.0
"""Seconds a barged-in answer may take to send its last event before it is cut off."""


def tts_target(settings: AgentSettings) -> str | Connect:
    """The SageMaker endpoint when one is configured, else the container's WebSocket URL."""
    if not settings.sagemaker_endpoint:
        return settings.tts_url
    from agent.sagemaker_transport import SageMakerConnector

    region = settings.sagemaker_region or settings.aws_region
    if not region:
        raise ValueError("SAGEMAKER_ENDPOINT_NAME is set but no region is: set SAGEMAKER_REGION or AWS_REGION")
    return SageMakerConnector(settings.sagemaker_endpoint, region, endpoint_uri=settings.sagemaker_endpoint_url,
                              ca_file=Path(settings.sagemaker_ca_bundle) if settings.sagemaker_ca_bundle else None)


def create_app(settings: AgentSettings | None = None) -> BedrockAgentCoreApp:
    settings = settings or AgentSettings.from_env()
    # Resolve "auto" once: looking for credentials can take seconds where none exist.
    settings = dataclasses.replace(settings, model=model_kind(settings))
    model = build_model(settings)  # fail at start-up, not on the first request, when misconfigured
    if hasattr(model, "warm_up"):
        model.warm_up()
    pipeline = VoicePipeline(lambda: build_model(settings), tts_target(settings),
                             system_prompt=settings.system_prompt, default_voice=settings.voice,
                             chunker_factory=lambda: SentenceChunker(quick_first_chunk=settings.quick_first_chunk),
                             pipelining=settings.pipelining,
                             session_factory=functools.partial(TTSSession, chunk_timeout=settings.tts_timeout,
                                                               max_reconnects=settings.tts_reconnects))
    app = BedrockAgentCoreApp()
    app.add_middleware(PayloadLimit, limit=MAX_PAYLOAD_BYTES)
    app.add_route("/", _page, methods=["GET"])
    # A payload nested deeper than the JSON parser recurses is bad input, not a server error.
    app.add_exception_handler(RecursionError, _too_deep)

    @app.entrypoint
    async def invoke(payload: Any, context: RequestContext) -> EventStream:
        try:
            request = VoiceRequest.from_payload(payload)
        except RequestError as exc:
            return EventStream(_one({**events.error(events.INVALID_REQUEST, str(exc)), "seq": 0}))
        # X-Amzn-Bedrock-AgentCore-Runtime-Session-Id: turns of one session share a conversation.
        return EventStream(pipeline.answer(request, context.session_id))

    @app.websocket
    async def converse(websocket: WebSocket, context: RequestContext) -> None:
        await WebSocketCaller(websocket, pipeline, context.session_id).run()

    return app


async def _page(request: Any) -> HTMLResponse:
    """The browser client (``agent/web/index.html``): one static page on the binary /ws leg."""
    return HTMLResponse((importlib.resources.files("agent") / "web" / "index.html").read_text(encoding="utf-8"))


async def _too_deep(request: Any, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": "Invalid JSON", "details": "the payload is nested too deeply"}, status_code=400)


async def _one(event: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield event


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


class WebSocketCaller:
    """The binary caller leg on ``/ws``: JSON control and events as text messages, audio as binary
    frames; no Base64.

    Client -> agent, one JSON object per text message:

    - ``{"type": "ask", "prompt": ..., "mode"?, "voice"?, "speed"?, "format"?}``: answer (the
      fields are the ``/invocations`` payload). An ``ask`` while an answer streams barges in: the
      current answer ends (``end`` with ``cancelled``) and the new one starts.
    - ``{"type": "cancel"}``: stop the current answer (barge-in); nothing happens when idle.

    Agent -> client: the same events as the SSE leg, one per text message, except that an audio
    event carries ``bytes`` (a length) instead of ``audio``, and its bytes follow at once as one
    binary frame. The asks of one connection continue one conversation (the AgentCore session's,
    when the runtime names one). A message that cannot be read gets an ``error`` event with a null
    ``seq`` and the connection goes on.
    """

    def __init__(self, websocket: WebSocket, pipeline: VoicePipeline, session_id: str | None) -> None:
        self._websocket = websocket
        self._pipeline = pipeline
        self._session_id = session_id or f"ws-{uuid.uuid4().hex}"
        self._send_lock = asyncio.Lock()
        self._answer: asyncio.Task[None] | None = None
        self._cancel = asyncio.Event()

    async def run(self) -> None:
        await self._websocket.accept()
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
            message = json.loads(data) if data is not None else None
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested deeper than the parser goes
            message = None
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "cancel":
            await self._stop_answer()
        elif kind == "ask":
            await self._stop_answer()
            payload = {key: value for key, value in message.items() if key != "type"}
            try:
                request = VoiceRequest.from_payload(payload)
            except RequestError as exc:
                await self._send({**events.error(events.INVALID_REQUEST, str(exc)), "seq": 0})
                return
            self._cancel = asyncio.Event()
            self._answer = asyncio.create_task(self._stream(request, self._cancel), name="ws-answer")
        else:
            await self._send({**events.error(events.INVALID_REQUEST, 'expected a JSON object with "type" '
                                                                    '"ask" or "cancel"'), "seq": None})

    async def _stream(self, request: VoiceRequest, cancel: asyncio.Event) -> None:
        async with contextlib.aclosing(self._pipeline.answer(request, self._session_id, cancel)) as answer:
            async for event in answer:
                if event["type"] == events.AUDIO:
                    header, data = events.split_audio(event)
                    await self._send(header, data)
                else:
                    await self._send(event)

    async def _stop_answer(self) -> None:
        """Barge in on the current answer and wait until it has sent its last event."""
        if self._answer is None or self._answer.done():
            return
        self._cancel.set()
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


class PayloadLimit:
    """ASGI middleware: an HTTP request body over ``limit`` bytes is answered 413 without being
    buffered whole (by its Content-Length, or as it streams in when it has none)."""

    def __init__(self, app: Any, limit: int) -> None:
        self._app = app
        self._limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._limit:
            await self._refuse(send)
            return
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the caller went away
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self._limit:
                await self._refuse(send)
                return
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self._app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        await JSONResponse({"error": "Payload too large", "details": f"the body exceeds {self._limit} bytes"},
                           status_code=413)({"type": "http"}, _nothing, send)


async def _nothing() -> dict[str, Any]:
    return {"type": "http.disconnect"}


def serve(settings: AgentSettings | None = None, host: str | None = None, port: int = 8080) -> None:
    """Run the agent as AgentCore does (port 8080), with the WebSocket message limit."""
    create_app(settings).run(host=host, port=port, ws_max_size=MAX_PAYLOAD_BYTES)


if __name__ == "__main__":
    serve()
