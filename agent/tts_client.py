"""A persistent, pipelined session with the TTS container, over any transport that moves frames.

One :class:`TTSSession` serves a whole answer: each sentence is sent as soon as it is ready, even
while earlier sentences are still being synthesized, and each :meth:`TTSSession.synthesize` call
returns a :class:`SynthesisStream` that yields that request's audio, in order.

Transports only move frames (see :class:`Transport`): :class:`WebSocketTransport` talks to the
container directly; ``agent.sagemaker_transport`` goes through SageMaker's
``InvokeEndpointWithBidirectionalStream``. The protocol itself lives in ``tts_protocol``.

Guarantees:

- Every stream ends: with its ``synthesis_complete``, with :class:`TTSError` when the server
  reports an error for it, with :class:`TTSConnectionError` when the session is lost for good, or
  with :class:`TTSTimeoutError` when nothing arrives for it within ``chunk_timeout``.
- If the transport drops, the session reconnects (at most ``max_reconnects`` times per session,
  with backoff) and sends again every request that has not completed, in order. Audio a stream
  already delivered is skipped on the new attempt, so no sentence is lost or repeated and the
  order is kept. (Resuming at a byte offset is exact because Kokoro's output is deterministic for
  a given text, voice, speed and build.)
- Memory is bounded: each stream buffers at most ``max_buffered_chunks`` audio frames; when the
  consumer falls behind, the session stops reading and the server's sends back up. Consume
  streams in the order they were created, as the audio arrives in that order.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, WebSocketException
from websockets.protocol import State

import tts_protocol as protocol

log = logging.getLogger(__name__)

DEFAULT_OPEN_TIMEOUT = 10.0
DEFAULT_CHUNK_TIMEOUT = 60.0
DEFAULT_CLOSE_TIMEOUT = 10.0
DEFAULT_MAX_BUFFERED_CHUNKS = 256
DEFAULT_MAX_PENDING_REQUESTS = 64
DEFAULT_MAX_RECONNECTS = 3
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
ABORT_WAIT = 1.0
"""Seconds an aborted WebSocket may take to report itself closed."""


class TTSError(Exception):
    """The TTS server refused or failed a request; ``code`` is one of ``tts_protocol``'s codes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class TTSConnectionError(TTSError):
    def __init__(self, message: str) -> None:
        super().__init__("connection_failed", message)


class TTSTimeoutError(TTSError):
    def __init__(self, message: str) -> None:
        super().__init__("timeout", message)


# Transports ---------------------------------------------------------------------------------


class TransportClosed(Exception):
    """The transport's stream ended: ``error`` is None for an orderly close, else what broke it."""

    def __init__(self, error: str | None = None) -> None:
        super().__init__(error or "closed")
        self.error = error


class Transport(Protocol):
    """Moves protocol frames; knows nothing of their meaning."""

    async def send(self, message: str) -> None:
        """Send one client message. Raises :class:`TransportClosed` if the stream is gone."""

    async def receive(self) -> str | bytes:
        """The next server frame: ``str`` for text, ``bytes`` for binary. Raises
        :class:`TransportClosed` at the end of the stream."""

    async def end_input(self) -> None:
        """No more messages will be sent; answers may still arrive."""

    async def close(self) -> None:
        """Close at once; safe to call twice."""


Connect = Callable[[], Awaitable[Transport]]
"""Opens a new transport; raises :class:`TTSConnectionError` when it cannot."""


class WebSocketTransport:
    """The container's ``/invocations-bidirectional-stream`` WebSocket, reached directly."""

    def __init__(self, connection: ClientConnection) -> None:
        self._connection = connection

    @classmethod
    def connector(cls, url: str, *, open_timeout: float = DEFAULT_OPEN_TIMEOUT,
                  max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                  close_timeout: float = DEFAULT_CLOSE_TIMEOUT) -> Connect:
        async def open_transport() -> Transport:
            try:
                connection = await connect(url, open_timeout=open_timeout, max_size=max_message_bytes,
                                           close_timeout=close_timeout)
            except (OSError, TimeoutError, WebSocketException) as exc:
                raise TTSConnectionError(f"cannot open a TTS session at {url}: {exc}") from exc
            return cls(connection)

        return open_transport

    async def send(self, message: str) -> None:
        try:
            await self._connection.send(message)
        except ConnectionClosed as exc:
            raise TransportClosed(str(exc)) from exc

    async def receive(self) -> str | bytes:
        try:
            return await self._connection.recv()
        except ConnectionClosedOK as exc:
            raise TransportClosed(None) from exc
        except ConnectionClosed as exc:
            raise TransportClosed(str(exc)) from exc

    async def end_input(self) -> None:
        """Nothing to do: the protocol's ``close`` message already tells the server."""

    async def close(self) -> None:
        """At once: no closing handshake. Once the session stops reading, unread audio fills the
        connection's buffer, reading pauses, and the server's close frame would wait behind it for
        the whole close timeout (measured: 10 s per cancelled answer). An orderly session end never
        gets here with the connection open: the server closes it after the last answer."""
        if self._connection.state is not State.CLOSED:
            self._connection.transport.abort()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._connection.wait_closed(), ABORT_WAIT)


# Streams and the session --------------------------------------------------------------------


class _Complete:
    def __init__(self, stats: dict[str, Any]) -> None:
        self.stats = stats


class SynthesisStream:
    """The audio of one synthesize request: ``async for chunk in stream`` yields PCM16 bytes."""

    def __init__(self, request: protocol.Synthesize, *, max_buffered_chunks: int, chunk_timeout: float) -> None:
        self.request = request
        self.sample_rate = protocol.SAMPLE_RATE
        self.stats: dict[str, Any] = {}
        self.attempts = 1
        """How many times the request was sent (more than one after a reconnection)."""
        self._items: asyncio.Queue[bytes | _Complete | TTSError] = asyncio.Queue(max_buffered_chunks)
        self._chunk_timeout = chunk_timeout
        self._accepted = 0
        self._skip = 0
        self._finished = False

    @property
    def request_id(self) -> str:
        return self.request.request_id

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        while not self._finished:
            try:
                item = await asyncio.wait_for(self._items.get(), self._chunk_timeout)
            except TimeoutError:
                self._finished = True
                raise TTSTimeoutError(
                    f"no audio for request {self.request_id} within {self._chunk_timeout} s") from None
            if isinstance(item, bytes):
                yield item
                continue
            self._finished = True
            if isinstance(item, TTSError):
                raise item
            self.stats = item.stats

    async def _put_audio(self, frame: bytes) -> None:
        if self._skip:
            skipped = min(self._skip, len(frame))
            self._skip -= skipped
            frame = frame[skipped:]
            if not frame:
                return
        self._accepted += len(frame)
        await self._items.put(frame)

    async def _put_end(self, item: _Complete | TTSError) -> None:
        await self._items.put(item)

    def _restart(self) -> None:
        """The request is being sent again: skip the audio this stream has already taken."""
        self._skip = self._accepted
        self.attempts += 1

    def _fail_now(self, error: TTSError) -> None:
        """End the stream with ``error`` without waiting for buffer space (the session is gone)."""
        while self._items.full():
            self._items.get_nowait()
        self._items.put_nowait(error)


class TTSSession:
    """``async with TTSSession(url) as tts: stream = await tts.synthesize("Hello.")``.

    ``target`` is the container's WebSocket URL or a :data:`Connect` callable (for SageMaker, see
    ``agent.sagemaker_transport``). Parameters are limits, each with the cost it bounds:

    - ``chunk_timeout``: seconds a stream may wait for its next audio frame or completion; one
      synthesis call of the longest piece Kokoro accepts takes ~12 s on two CPU cores.
    - ``close_timeout``: seconds :meth:`close` waits for requests in flight to finish.
    - ``max_buffered_chunks``: audio frames buffered per stream (200 ms and 9.6 KB each by default).
    - ``max_pending_requests``: requests in flight at once; :meth:`synthesize` raises beyond it.
    - ``max_reconnects``: reconnections per session after the transport drops; then every stream
      in flight ends with :class:`TTSConnectionError`.
    - ``reconnect_backoff``: seconds before the first reconnection attempt, doubled each time.
    """

    def __init__(self, target: str | Connect, *, voice: str | None = None, speed: float = 1.0,
                 open_timeout: float = DEFAULT_OPEN_TIMEOUT, chunk_timeout: float = DEFAULT_CHUNK_TIMEOUT,
                 close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
                 max_buffered_chunks: int = DEFAULT_MAX_BUFFERED_CHUNKS,
                 max_pending_requests: int = DEFAULT_MAX_PENDING_REQUESTS,
                 max_reconnects: int = DEFAULT_MAX_RECONNECTS, reconnect_backoff: float = 0.2) -> None:
        self._connect: Connect = (WebSocketTransport.connector(target, open_timeout=open_timeout,
                                                               close_timeout=close_timeout)
                                  if isinstance(target, str) else target)
        self.voice = voice
        self.speed = speed
        self._chunk_timeout = chunk_timeout
        self._close_timeout = close_timeout
        self._max_buffered_chunks = max_buffered_chunks
        self._max_pending_requests = max_pending_requests
        self._max_reconnects = max_reconnects
        self._reconnect_backoff = reconnect_backoff
        self.reconnects = 0
        self._ids = (f"{uuid.uuid4().hex[:8]}-{n}" for n in itertools.count(1))
        self._pending: dict[str, SynthesisStream] = {}
        self._current: SynthesisStream | None = None
        self._transport: Transport | None = None
        self._reader: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        """Held while sending a request and while reconnecting, so a request is never sent twice."""
        self._closing = False
        self._failure: str | None = None

    async def __aenter__(self) -> TTSSession:
        await self.open()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        if exc_type is None:
            await self.close()
        else:
            await self.abort()

    async def open(self) -> None:
        self._transport = await self._connect()
        self._reader = asyncio.create_task(self._read(), name="tts-session-reader")

    async def synthesize(self, text: str, *, voice: str | None = None, speed: float | None = None) -> SynthesisStream:
        """Send one request now (or as soon as a reconnection completes) and return its stream."""
        if self._failure is not None or self._transport is None or self._closing:
            raise TTSConnectionError(self._failure or "the session is not open")
        if len(self._pending) >= self._max_pending_requests:
            raise TTSError("too_many_requests", f"{self._max_pending_requests} requests are already in flight")
        request = protocol.Synthesize(request_id=next(self._ids), text=text, voice=voice or self.voice,
                                      speed=self.speed if speed is None else speed)
        stream = SynthesisStream(request, max_buffered_chunks=self._max_buffered_chunks,
                                 chunk_timeout=self._chunk_timeout)
        async with self._lock:
            if self._failure is not None:
                raise TTSConnectionError(self._failure)
            self._pending[request.request_id] = stream
            with contextlib.suppress(TransportClosed):  # the reader reconnects and sends it again
                await self._transport.send(protocol.encode_synthesize(request))
        return stream

    async def cancel(self) -> None:
        """Ask the server to drop queued requests and stop the current one; their streams end with
        a ``cancelled`` :class:`TTSError`."""
        if self._transport is not None and self._failure is None:
            with contextlib.suppress(TransportClosed):
                await self._transport.send(protocol.encode_cancel())

    async def close(self) -> None:
        """Let requests in flight finish, then close. Streams not consumed by then are ended."""
        if self._transport is None:
            return
        self._closing = True
        with contextlib.suppress(TransportClosed):
            await self._transport.send(protocol.encode_close())
            await self._transport.end_input()
        if self._reader is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._reader), self._close_timeout)
            except TimeoutError:
                log.warning("TTS session did not finish within %.1f s of close; aborting", self._close_timeout)
        await self.abort()

    async def abort(self) -> None:
        """Close at once; streams in flight end with :class:`TTSConnectionError`."""
        self._closing = True
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._transport is not None:
            with contextlib.suppress(Exception):
                await self._transport.close()
        self._fail_pending("the session was closed")

    async def _read(self) -> None:
        while True:
            assert self._transport is not None
            try:
                frame = await self._transport.receive()
            except TransportClosed as closed:
                if self._closing:
                    self._fail_pending("the TTS server closed the session")
                    return
                if not await self._reconnect(closed.error or "the server closed the session"):
                    return
                continue
            try:
                await self._dispatch(protocol.parse_server_message(frame))
            except ValueError as exc:
                log.error("TTS protocol violation: %s", exc)
                self._fail_pending(f"protocol violation: {exc}")
                await self._transport.close()
                return

    async def _reconnect(self, reason: str) -> bool:
        """Open a new transport and send every unfinished request again, in order."""
        async with self._lock:
            assert self._transport is not None
            with contextlib.suppress(Exception):
                await self._transport.close()
            last_error = reason
            while self.reconnects < self._max_reconnects:
                await asyncio.sleep(self._reconnect_backoff * 2 ** self.reconnects)
                self.reconnects += 1
                log.warning("TTS session lost (%s); reconnecting, attempt %d of %d with %d request(s) in flight",
                            last_error, self.reconnects, self._max_reconnects, len(self._pending))
                try:
                    self._transport = await self._connect()
                    self._current = None
                    for stream in self._pending.values():
                        stream._restart()
                        await self._transport.send(protocol.encode_synthesize(stream.request))
                    return True
                except (TTSConnectionError, TransportClosed) as exc:
                    last_error = str(exc)
            self._fail_pending(f"TTS session lost ({reason}); gave up after {self._max_reconnects} "
                               f"reconnection attempt(s): {last_error}")
            return False

    async def _dispatch(self, message: protocol.ServerMessage | bytes) -> None:
        if isinstance(message, bytes):
            if self._current is None:
                raise ValueError("audio frame outside any synthesis")
            await self._current._put_audio(message)
        elif isinstance(message, protocol.SynthesisStart):
            self._current = self._pending.get(message.request_id)
            if self._current is None:
                raise ValueError(f"synthesis_start for unknown request {message.request_id!r}")
            self._current.sample_rate = message.sample_rate
        elif isinstance(message, protocol.SynthesisComplete):
            stream = self._pending.pop(message.request_id, None)
            if stream is None:
                raise ValueError(f"synthesis_complete for unknown request {message.request_id!r}")
            self._current = None
            await stream._put_end(_Complete(message.stats))
        else:
            stream = self._pending.pop(message.request_id, None) if message.request_id else None
            if stream is None and message.code == protocol.OVERLOADED:
                # The server refused the session: say so to every request rather than retrying.
                log.warning("TTS server refused the session: %s", message.message)
                self._closing = True
                self._failure = self._failure or f"{message.code}: {message.message}"
                for pending in self._pending.values():
                    pending._fail_now(TTSError(message.code, message.message))
                self._pending.clear()
                return
            if stream is None:
                log.warning("TTS server error not tied to a request: %s: %s", message.code, message.message)
                return
            if stream is self._current:
                self._current = None
            await stream._put_end(TTSError(message.code, message.message))

    def _fail_pending(self, reason: str) -> None:
        self._failure = self._failure or reason
        for stream in self._pending.values():
            stream._fail_now(TTSConnectionError(reason))
        self._pending.clear()
        self._current = None
