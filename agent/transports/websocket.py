"""The TTS container's ``/invocations-bidirectional-stream`` WebSocket, reached directly."""

from __future__ import annotations

import asyncio
import contextlib

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, WebSocketException
from websockets.protocol import State

from agent.transports import DEFAULT_OPEN_TIMEOUT, Connect, Transport, TransportClosed
from agent.tts_client import TTSConnectionError

DEFAULT_CLOSE_TIMEOUT = 10.0
"""Seconds an orderly close may wait for the server's close frame."""
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""Largest frame accepted from the server (an audio frame is 9.6 KB by default)."""
ABORT_WAIT = 1.0
"""Seconds an aborted WebSocket may take to report itself closed."""


class WebSocketTransport:
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
