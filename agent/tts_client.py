"""A persistent, pipelined session with the TTS container, over any transport that moves frames.

One :class:`TTSSession` serves a whole answer: each sentence is sent as soon as it is ready, even
while earlier sentences are still being synthesized, and each :meth:`TTSSession.synthesize` call
returns a :class:`SynthesisStream` that yields that request's audio, in order. The protocol's state
(request order, which request is receiving audio, what to skip after a reconnection, one final
reply per request) is ``tts_protocol.client.ClientSession``; this module only moves its frames and
waits. Transports are in ``agent.transports``.

Guarantees:

- Every stream ends: with its ``synthesis_complete``, with :class:`TTSError` when the server
  reports an error for it, with :class:`TTSConnectionError` when the session is lost for good, or
  with :class:`TTSTimeoutError` when nothing arrives for it within ``chunk_timeout``.
- If the transport drops, the session reconnects (at most ``max_reconnects`` times per session,
  with backoff) and sends again every request that has not completed, in order; audio a stream
  already delivered is skipped on the new attempt, so no sentence is lost or repeated.
- Memory is bounded: each stream buffers at most ``max_buffered_chunks`` audio frames; when the
  consumer falls behind, the session stops reading and the server's sends back up. Consume
  streams in the order they were created, as the audio arrives in that order.
- Cancel-safety: cancelling a task that iterates a stream leaves the session usable;
  :meth:`TTSSession.abort` may be called at any time, any number of times.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import tts_protocol as protocol
from agent.transports import DEFAULT_OPEN_TIMEOUT, Connect, Transport, TransportClosed
from tts_protocol.client import Audio, ClientSession, Completed, Failed, ProtocolViolation, Refused, Started, Words

log = logging.getLogger(__name__)

DEFAULT_CHUNK_TIMEOUT = 60.0
DEFAULT_CLOSE_TIMEOUT = 10.0
DEFAULT_MAX_BUFFERED_CHUNKS = 256
DEFAULT_MAX_PENDING_REQUESTS = 64
DEFAULT_MAX_RECONNECTS = 3


class TTSError(Exception):
    """The TTS server refused or failed a request; ``code`` is one of ``tts_protocol``'s codes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class TTSConnectionError(TTSError):
    def __init__(self, message: str) -> None:
        super().__init__(protocol.CONNECTION_FAILED, message)


class TTSTimeoutError(TTSError):
    def __init__(self, message: str) -> None:
        super().__init__(protocol.TIMEOUT, message)


class _End:
    def __init__(self, stats: dict[str, Any] | None = None, error: TTSError | None = None) -> None:
        self.stats = stats or {}
        self.error = error


class SynthesisStream:
    """The audio of one synthesize request: ``async for chunk in stream`` yields PCM16 bytes;
    :meth:`items` yields the same audio with, before each stretch of it, the words it speaks (a
    tuple of ``tts_protocol.Word``, from a server that reports them). :attr:`words` collects every
    word either way."""

    def __init__(self, request_id: str, *, max_buffered_chunks: int, chunk_timeout: float) -> None:
        self.request_id = request_id
        self.sample_rate = protocol.SAMPLE_RATE
        self.stats: dict[str, Any] = {}
        self.words: list[protocol.Word] = []
        self._items: asyncio.Queue[bytes | tuple[protocol.Word, ...] | _End] = asyncio.Queue(max_buffered_chunks)
        self._chunk_timeout = chunk_timeout
        self._finished = False
        self._attempts = 1

    @property
    def attempts(self) -> int:
        """How many times the request was sent (more than one after a reconnection)."""
        return self._attempts

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._audio()

    async def _audio(self) -> AsyncIterator[bytes]:
        async for item in self.items():
            if isinstance(item, bytes):
                yield item

    async def items(self) -> AsyncIterator[bytes | tuple[protocol.Word, ...]]:
        """The audio, and the words before the audio that speaks them, in the order they came."""
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
            if isinstance(item, tuple):
                self.words += item
                yield item
                continue
            self._finished = True
            if item.error is not None:
                raise item.error
            self.stats = item.stats

    def _fail_now(self, error: TTSError) -> None:
        """End the stream with ``error`` without waiting for buffer space (the session is gone)."""
        while self._items.full():
            self._items.get_nowait()
        self._items.put_nowait(_End(error=error))


class TTSSession:
    """``async with TTSSession(url) as tts: stream = await tts.synthesize("Hello.")``.

    ``target`` is the container's WebSocket URL or a :data:`~agent.transports.Connect` callable
    (for SageMaker, see ``agent.transports.sagemaker``). Parameters are limits, each with the cost
    it bounds:

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
        if isinstance(target, str):
            from agent.transports.websocket import WebSocketTransport

            target = WebSocketTransport.connector(target, open_timeout=open_timeout, close_timeout=close_timeout)
        self._connect: Connect = target
        self.voice = voice
        self.speed = speed
        self._chunk_timeout = chunk_timeout
        self._close_timeout = close_timeout
        self._max_buffered_chunks = max_buffered_chunks
        self._max_pending_requests = max_pending_requests
        self._max_reconnects = max_reconnects
        self._reconnect_backoff = reconnect_backoff
        self.reconnects = 0
        self._protocol = ClientSession()
        self._streams: dict[str, SynthesisStream] = {}
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

    async def synthesize(self, text: str, *, voice: str | None = None, speed: float | None = None,
                         windows: bool = False) -> SynthesisStream:
        """Send one request now (or as soon as a reconnection completes) and return its stream.
        ``windows``: a listener is waiting for it (the server renders it in windows)."""
        if self._failure is not None or self._transport is None or self._closing:
            raise TTSConnectionError(self._failure or "the session is not open")
        if len(self._streams) >= self._max_pending_requests:
            raise TTSError(protocol.TOO_MANY_REQUESTS, f"{self._max_pending_requests} requests are already in flight")
        async with self._lock:
            if self._failure is not None:
                raise TTSConnectionError(self._failure)
            request_id, message = self._protocol.synthesize(text, voice=voice or self.voice,
                                                            speed=self.speed if speed is None else speed,
                                                            windows=windows)
            stream = SynthesisStream(request_id, max_buffered_chunks=self._max_buffered_chunks,
                                     chunk_timeout=self._chunk_timeout)
            self._streams[request_id] = stream
            with contextlib.suppress(TransportClosed):  # the reader reconnects and sends it again
                await self._transport.send(message)
        return stream

    async def cancel(self) -> None:
        """Ask the server to drop queued requests and stop the current one; their streams end with
        a ``cancelled`` :class:`TTSError`."""
        if self._transport is not None and self._failure is None:
            with contextlib.suppress(TransportClosed):
                await self._transport.send(self._protocol.cancel())

    async def close(self) -> None:
        """Let requests in flight finish, then close. Streams not consumed by then are ended."""
        if self._transport is None:
            return
        self._closing = True
        with contextlib.suppress(TransportClosed):
            await self._transport.send(self._protocol.close())
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
                happened = self._protocol.receive(frame)
            except ProtocolViolation as exc:
                log.error("TTS protocol violation: %s", exc)
                self._fail_pending(f"protocol violation: {exc}")
                await self._transport.close()
                return
            for event in happened:
                await self._deliver(event)

    async def _deliver(self, event: Any) -> None:
        if isinstance(event, Audio):
            await self._streams[event.request_id]._items.put(event.data)
        elif isinstance(event, Words):
            await self._streams[event.request_id]._items.put(event.words)
        elif isinstance(event, Started):
            self._streams[event.request_id].sample_rate = event.sample_rate
        elif isinstance(event, Completed):
            await self._streams.pop(event.request_id)._items.put(_End(stats=event.stats))
        elif isinstance(event, Failed):
            stream = self._streams.pop(event.request_id)
            await stream._items.put(_End(error=TTSError(event.code, event.message)))
        elif isinstance(event, Refused):
            # The server refused the session: say so to every request rather than retrying.
            log.warning("TTS server refused the session: %s", event.error.message)
            self._closing = True
            self._failure = self._failure or f"{event.error.code}: {event.error.message}"
        else:
            log.warning("TTS server error not tied to a request: %s: %s", event.error.code, event.error.message)

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
                            last_error, self.reconnects, self._max_reconnects, len(self._streams))
                try:
                    self._transport = await self._connect()
                    for message in self._protocol.resend():
                        await self._transport.send(message)
                    for stream in self._streams.values():
                        stream._attempts += 1
                    return True
                except (TTSConnectionError, TransportClosed) as exc:
                    last_error = str(exc)
            self._fail_pending(f"TTS session lost ({reason}); gave up after {self._max_reconnects} "
                               f"reconnection attempt(s): {last_error}")
            return False

    def _fail_pending(self, reason: str) -> None:
        self._failure = self._failure or reason
        self._protocol.fail_all(protocol.CONNECTION_FAILED, reason)
        for stream in self._streams.values():
            stream._fail_now(TTSConnectionError(reason))
        self._streams.clear()
