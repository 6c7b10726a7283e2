"""A persistent, pipelined session with the TTS container over one WebSocket.

One :class:`TTSSession` serves a whole answer: each sentence is sent as soon as it is ready, even
while earlier sentences are still being synthesized, and each :meth:`TTSSession.synthesize` call
returns a :class:`SynthesisStream` that yields that request's audio, in order.

Guarantees:

- Every stream ends: with its ``synthesis_complete``, with :class:`TTSError` when the server
  reports an error for it, with :class:`TTSConnectionError` when the connection drops, or with
  :class:`TTSTimeoutError` when no audio or completion arrives within ``chunk_timeout``.
- Memory is bounded: each stream buffers at most ``max_buffered_chunks`` audio frames; when the
  consumer falls behind, the session stops reading and the server's sends back up (TCP
  backpressure). Consume streams in the order they were created, as the audio arrives in that
  order.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

import tts_protocol as protocol

log = logging.getLogger(__name__)

DEFAULT_OPEN_TIMEOUT = 10.0
DEFAULT_CHUNK_TIMEOUT = 60.0
DEFAULT_CLOSE_TIMEOUT = 10.0
DEFAULT_MAX_BUFFERED_CHUNKS = 256
DEFAULT_MAX_PENDING_REQUESTS = 64


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


class _Complete:
    def __init__(self, stats: dict[str, Any]) -> None:
        self.stats = stats


class SynthesisStream:
    """The audio of one synthesize request: ``async for chunk in stream`` yields PCM16 bytes."""

    def __init__(self, request_id: str, text: str, *, max_buffered_chunks: int, chunk_timeout: float) -> None:
        self.request_id = request_id
        self.text = text
        self.sample_rate = protocol.SAMPLE_RATE
        self.stats: dict[str, Any] = {}
        self._items: asyncio.Queue[bytes | _Complete | TTSError] = asyncio.Queue(max_buffered_chunks)
        self._chunk_timeout = chunk_timeout
        self._finished = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        while not self._finished:
            try:
                item = await asyncio.wait_for(self._items.get(), self._chunk_timeout)
            except TimeoutError:
                self._finished = True
                raise TTSTimeoutError(f"no audio for request {self.request_id} within {self._chunk_timeout} s") from None
            if isinstance(item, bytes):
                yield item
                continue
            self._finished = True
            if isinstance(item, TTSError):
                raise item
            self.stats = item.stats

    async def _put(self, item: bytes | _Complete | TTSError) -> None:
        await self._items.put(item)

    def _fail_now(self, error: TTSError) -> None:
        """End the stream with ``error`` without waiting for buffer space (the session is gone)."""
        while self._items.full():
            self._items.get_nowait()
        self._items.put_nowait(error)


class TTSSession:
    """``async with TTSSession(url) as tts: stream = await tts.synthesize("Hello.")``.

    Parameters are limits, each with the cost it bounds:

    - ``open_timeout``: seconds to connect and finish the WebSocket handshake.
    - ``chunk_timeout``: seconds a stream may wait for its next audio frame or completion; one
      synthesis call of the longest piece Kokoro accepts takes ~12 s on two CPU cores.
    - ``close_timeout``: seconds :meth:`close` waits for queued requests to finish.
    - ``max_buffered_chunks``: audio frames buffered per stream (200 ms and 9.6 KB each by default).
    - ``max_pending_requests``: requests in flight at once; :meth:`synthesize` raises beyond it.
    - ``max_message_bytes``: largest server frame accepted.
    """

    def __init__(self, url: str, *, voice: str | None = None, speed: float = 1.0,
                 open_timeout: float = DEFAULT_OPEN_TIMEOUT, chunk_timeout: float = DEFAULT_CHUNK_TIMEOUT,
                 close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
                 max_buffered_chunks: int = DEFAULT_MAX_BUFFERED_CHUNKS,
                 max_pending_requests: int = DEFAULT_MAX_PENDING_REQUESTS,
                 max_message_bytes: int = 4 * 1024 * 1024) -> None:
        self.url = url
        self.voice = voice
        self.speed = speed
        self._open_timeout = open_timeout
        self._chunk_timeout = chunk_timeout
        self._close_timeout = close_timeout
        self._max_buffered_chunks = max_buffered_chunks
        self._max_pending_requests = max_pending_requests
        self._max_message_bytes = max_message_bytes
        self._ids = (f"{uuid.uuid4().hex[:8]}-{n}" for n in itertools.count(1))
        self._pending: dict[str, SynthesisStream] = {}
        self._current: SynthesisStream | None = None
        self._connection: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._closed_reason: str | None = None

    async def __aenter__(self) -> TTSSession:
        await self.open()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        if exc_type is None:
            await self.close()
        else:
            await self.abort()

    async def open(self) -> None:
        try:
            self._connection = await connect(self.url, open_timeout=self._open_timeout,
                                             max_size=self._max_message_bytes, close_timeout=self._close_timeout)
        except (OSError, TimeoutError, WebSocketException) as exc:
            raise TTSConnectionError(f"cannot open a TTS session at {self.url}: {exc}") from exc
        self._reader = asyncio.create_task(self._read(), name="tts-session-reader")

    async def synthesize(self, text: str, *, voice: str | None = None, speed: float | None = None) -> SynthesisStream:
        """Send one request now and return the stream of its audio."""
        if self._connection is None or self._closed_reason is not None:
            raise TTSConnectionError(self._closed_reason or "the session is not open")
        if len(self._pending) >= self._max_pending_requests:
            raise TTSError("too_many_requests", f"{self._max_pending_requests} requests are already in flight")
        request = protocol.Synthesize(request_id=next(self._ids), text=text, voice=voice or self.voice,
                                      speed=self.speed if speed is None else speed)
        stream = SynthesisStream(request.request_id, text, max_buffered_chunks=self._max_buffered_chunks,
                                 chunk_timeout=self._chunk_timeout)
        self._pending[request.request_id] = stream
        try:
            await self._connection.send(protocol.encode_synthesize(request))
        except ConnectionClosed as exc:
            self._pending.pop(request.request_id, None)
            raise TTSConnectionError(f"TTS session closed: {exc}") from exc
        return stream

    async def cancel(self) -> None:
        """Ask the server to drop queued requests and stop the current one; their streams end with
        a ``cancelled`` :class:`TTSError`."""
        if self._connection is not None and self._closed_reason is None:
            with contextlib.suppress(ConnectionClosed):
                await self._connection.send(protocol.encode_cancel())

    async def close(self) -> None:
        """Let queued requests finish, then close. Streams not consumed by then are ended."""
        if self._connection is None:
            return
        with contextlib.suppress(ConnectionClosed):
            await self._connection.send(protocol.encode_close())
        if self._reader is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._reader), self._close_timeout)
            except TimeoutError:
                log.warning("TTS session did not finish within %.1f s of close; aborting", self._close_timeout)
        await self.abort()

    async def abort(self) -> None:
        """Close at once; pending streams end with :class:`TTSConnectionError`."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._connection is not None:
            await self._connection.close()
        self._fail_pending("the session was closed")

    async def _read(self) -> None:
        assert self._connection is not None
        try:
            async for frame in self._connection:
                await self._dispatch(protocol.parse_server_message(frame))
            self._fail_pending("the TTS server closed the session")
        except ConnectionClosed as exc:
            self._fail_pending(f"the TTS connection dropped: {exc}")
        except ValueError as exc:
            log.error("TTS protocol violation: %s", exc)
            self._fail_pending(f"protocol violation: {exc}")
            await self._connection.close()

    async def _dispatch(self, message: protocol.ServerMessage | bytes) -> None:
        if isinstance(message, bytes):
            if self._current is None:
                raise ValueError("audio frame outside any synthesis")
            await self._current._put(message)
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
            await stream._put(_Complete(message.stats))
        else:
            stream = self._pending.pop(message.request_id, None) if message.request_id else None
            if stream is None:
                log.warning("TTS server error not tied to a request: %s: %s", message.code, message.message)
                return
            if stream is self._current:
                self._current = None
            await stream._put(TTSError(message.code, message.message))

    def _fail_pending(self, reason: str) -> None:
        self._closed_reason = self._closed_reason or reason
        for stream in self._pending.values():
            stream._fail_now(TTSConnectionError(reason))
        self._pending.clear()
        self._current = None
