"""A local stand-in for SageMaker's ``InvokeEndpointWithBidirectionalStream``, for offline tests.

It speaks the service's wire protocol as the SDK (``aws-sdk-sagemaker-runtime-http2``) sends it:
HTTP/2 over TLS, ``POST /endpoints/{EndpointName}/invocations-bidirectional-stream`` with an
``application/vnd.amazon.eventstream`` body in both directions. Each request event is a signed
envelope (``:date``, ``:chunk-signature``) whose payload is an inner ``PayloadPart`` event; an
empty envelope ends the input. Like SageMaker, the stand-in forwards each request payload part to
the container's WebSocket as a **binary** frame, and each container frame back as a response
``PayloadPart`` (``DataType`` ``UTF8`` for text frames, ``BINARY`` for binary ones).

What it does not do: check SigV4 signatures (it has no secret to check them with), route to
variants, or meter. A container error before the stream starts is answered like the service:
an HTTP error with ``x-amzn-errortype``; after it started, as a ``ModelStreamError`` exception event.

Faults (:class:`Faults`), for tests of the client's recovery: the first stream opens answered with
HTTP 429 ``ThrottlingException``; the first stream reset (HTTP/2 ``RST_STREAM``) after some of its
response parts; or the whole stand-in gone (its connections closed by the server) after some.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import re
import ssl
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config
from smithy_aws_event_stream.events import Event, EventMessage
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from tts_protocol import BIDI_PATH
from voice_agent.dev.local_tls import LocalTLS

log = logging.getLogger(__name__)

PATH = re.compile(rf"^/endpoints/(?P<endpoint>[A-Za-z0-9-]{{1,63}}){re.escape(BIDI_PATH)}$")
EVENT_STREAM = b"application/vnd.amazon.eventstream"
MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The event-stream format's own limit on one message (prelude length is checked against it)."""
CONTAINER_OPEN_TIMEOUT = 5.0

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class EventStreamError(ValueError):
    pass


class EventStreamDecoder:
    """Incremental event-stream framing: feed body bytes as they come, get whole messages."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[EventMessage]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= 4:
            (total,) = struct.unpack("!I", self._buffer[:4])
            if total > MAX_EVENT_BYTES or total < 16:
                raise EventStreamError(f"event length {total} is out of range")
            if len(self._buffer) < total:
                break
            try:
                event = Event.decode(io.BytesIO(bytes(self._buffer[:total])))
            except Exception as exc:  # the codec raises several unrelated types for corrupt bytes
                raise EventStreamError(f"undecodable event: {exc}") from exc
            del self._buffer[:total]
            if event is not None:
                messages.append(event.message)
        return messages


def payload_part(payload: bytes, data_type: str) -> bytes:
    return EventMessage(headers={":message-type": "event", ":event-type": "PayloadPart",
                                 ":content-type": "application/octet-stream", "DataType": data_type},
                        payload=payload).encode()


def exception_event(exception_type: str, message: str) -> bytes:
    return EventMessage(headers={":message-type": "exception", ":exception-type": exception_type,
                                 ":content-type": "application/json"},
                        payload=json.dumps({"Message": message}).encode()).encode()


@dataclass(frozen=True)
class Faults:
    throttle_first: int = 0
    """Stream opens answered HTTP 429 ``ThrottlingException``, before any stream starts."""
    reset_after_parts: int | None = None
    """The first stream is reset (``RST_STREAM``) once this many response parts have gone out."""
    exit_after_parts: int | None = None
    """The stand-in exits (the server closes its connections) once the first stream has sent this many."""


class _ResetStream(Exception):
    """Raised out of the app mid-response: the HTTP/2 server resets the stream."""


class SageMakerStandIn:
    """The ASGI app. ``container_url`` is the container's bidirectional-stream WebSocket."""

    def __init__(self, container_url: str, faults: Faults = Faults()) -> None:
        self.container_url = container_url
        self.faults = faults
        self.opens = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        match = PATH.match(scope["path"])
        if scope["method"] != "POST" or match is None:
            await _http_error(send, 404, "UnknownOperationException",
                              f"no operation at {scope['method']} {scope['path']}")
            return
        content_type = dict(scope["headers"]).get(b"content-type", b"")
        if not content_type.startswith(EVENT_STREAM):
            await _http_error(send, 400, "ValidationError", "content-type must be application/vnd.amazon.eventstream")
            return
        self.opens += 1
        if self.opens <= self.faults.throttle_first:
            log.info("stream open %d throttled", self.opens)
            await _http_error(send, 429, "ThrottlingException", "Rate exceeded")
            return
        try:
            container = await connect(self.container_url, open_timeout=CONTAINER_OPEN_TIMEOUT, max_size=None)
        except (OSError, TimeoutError, WebSocketException) as exc:
            # The service reports a container that cannot take the stream as a ModelError (424).
            await _http_error(send, 424, "ModelError", f"the model container refused the stream: {exc}")
            return
        log.info("stream opened for endpoint %s", match["endpoint"])
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", EVENT_STREAM),
                                (b"x-amzn-invoked-production-variant", b"AllTraffic")]})
        async with container:
            await self._relay(receive, send, container, first=self.opens == self.faults.throttle_first + 1)

    def _fault_after(self, parts: int) -> None:
        """The first stream's fault, once ``parts`` response parts have gone out."""
        if parts == self.faults.exit_after_parts:
            log.info("exiting after %d response parts of the first stream", parts)
            os._exit(3)  # every connection is closed by the server, mid-answer
        if parts == self.faults.reset_after_parts:
            log.info("resetting the first stream after %d response parts", parts)
            raise _ResetStream

    async def _relay(self, receive: Receive, send: Send, container: ClientConnection, *, first: bool) -> None:
        send_lock = asyncio.Lock()
        parts = 0

        async def send_body(data: bytes, more: bool = True) -> None:
            nonlocal parts
            async with send_lock:
                await send({"type": "http.response.body", "body": data, "more_body": more})
                parts += 1
                if first:
                    self._fault_after(parts)

        async def upstream() -> bool:
            """Forward the client's payload parts; True when its input ended, False on disconnect."""
            decoder = EventStreamDecoder()
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return False
                for envelope in decoder.feed(message.get("body", b"")):
                    if not envelope.payload:
                        return True  # the empty envelope: the client has finished sending
                    for inner in EventStreamDecoder().feed(envelope.payload):
                        if inner.headers.get(":event-type") == "PayloadPart":
                            await container.send(inner.payload, text=False)
                if not message.get("more_body", False):
                    return True

        async def downstream() -> None:
            async for frame in container:
                if isinstance(frame, str):
                    await send_body(payload_part(frame.encode("utf-8"), "UTF8"))
                else:
                    await send_body(payload_part(frame, "BINARY"))

        up = asyncio.create_task(upstream())
        down = asyncio.create_task(downstream())
        try:
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            if down.done() and isinstance(down.exception(), _ResetStream):
                raise _ResetStream  # out of the app without ending the body
            if up.done() and up.exception() is None and up.result():
                await asyncio.wait({down})  # the client finished sending; the container may still answer
            if up.done() and isinstance(up.exception(), EventStreamError):
                await send_body(exception_event("InternalStreamFailure", str(up.exception())))
            elif down.done() and isinstance(down.exception(), ConnectionClosed):
                await send_body(exception_event("ModelStreamError",
                                                f"the model container dropped the stream: {down.exception()}"))
            elif container.close_code not in (1000, None):
                await send_body(exception_event("ModelStreamError",
                                                f"the model container closed the stream with code "
                                                f"{container.close_code}: {container.close_reason}"))
        finally:
            for task in (up, down):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed, EventStreamError, _ResetStream):
                    await task
            if not (down.done() and not down.cancelled() and isinstance(down.exception(), _ResetStream)):
                with contextlib.suppress(Exception):
                    await send_body(b"", more=False)


async def _http_error(send: Send, status: int, error_type: str, message: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"x-amzn-errortype", error_type.encode())]})
    await send({"type": "http.response.body", "body": json.dumps({"Message": message}).encode()})


def hypercorn_config(host: str, port: int, tls: LocalTLS) -> Config:
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.certfile = str(tls.server_cert)
    config.keyfile = str(tls.server_key)
    config.alpn_protocols = ["h2"]
    config.accesslog = None
    return config


async def serve_stand_in(container_url: str, host: str, port: int, tls: LocalTLS, faults: Faults = Faults()) -> None:
    """Serve until cancelled (or SIGTERM/SIGINT when run as the main program)."""
    log.info("SageMaker stand-in on https://%s:%d -> %s (trust %s)", host, port, container_url, tls.ca_cert)
    asyncio.get_running_loop().set_exception_handler(_quiet_tls_shutdown)
    await serve(SageMakerStandIn(container_url, faults), hypercorn_config(host, port, tls))


def _quiet_tls_shutdown(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A client that drops its connection without a TLS close exchange is routine, not an error."""
    if isinstance(context.get("exception"), ssl.SSLError):
        log.debug("TLS connection ended abruptly: %s", context["exception"])
        return
    loop.default_exception_handler(context)
