"""A TCP proxy on loopback between the agent and a TTS server that injects one fault when told to,
for the fault campaign (``voice-agent bench reliability``).

It forwards bytes both ways and reads the server's WebSocket frames as they pass (a server's frames
are not masked; the servers here do not fragment messages), so a fault can land at a chosen point
of the TTS protocol:

- ``reset``: both sockets of every open connection aborted (the agent sees a reset connection);
- ``mid_frame``: the next binary (audio) frame cut in half, then the connection aborted;
- ``stall``: the server's frames held back for ``stall_seconds``, then released;
- ``error_reply``: the rest of the answer being sent replaced by an ``error`` message
  (``synthesis_failed``), as a server whose synthesis failed midway answers.

Killing and restarting the server itself is the campaign's to do (it owns the process)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from dataclasses import dataclass, field

import tts_protocol as protocol

FAULTS = ("reset", "mid_frame", "stall", "error_reply")
OPCODE_TEXT, OPCODE_BINARY = 0x1, 0x2
CLOSE_TIMEOUT = 5.0
"""Seconds :meth:`FaultProxy.close` waits for the links' handlers to end."""


def parse_frame(buffer: bytes) -> tuple[int, bytes, int] | None:
    """``(opcode, payload, frame length)`` of the first whole unmasked frame in ``buffer``, or None."""
    if len(buffer) < 2:
        return None
    opcode, length, offset = buffer[0] & 0x0F, buffer[1] & 0x7F, 2
    if length == 126:
        if len(buffer) < 4:
            return None
        length, offset = struct.unpack("!H", buffer[2:4])[0], 4
    elif length == 127:
        if len(buffer) < 10:
            return None
        length, offset = struct.unpack("!Q", buffer[2:10])[0], 10
    if buffer[1] & 0x80:
        offset += 4  # a masking key: a client's frame (not read here)
    if len(buffer) < offset + length:
        return None
    return opcode, buffer[offset:offset + length], offset + length


def text_frame(text: str) -> bytes:
    """One unmasked text frame, as a server sends it."""
    payload = text.encode("utf-8")
    if len(payload) < 126:
        header = struct.pack("!BB", 0x80 | OPCODE_TEXT, len(payload))
    elif len(payload) < 65536:
        header = struct.pack("!BBH", 0x80 | OPCODE_TEXT, 126, len(payload))
    else:
        header = struct.pack("!BBQ", 0x80 | OPCODE_TEXT, 127, len(payload))
    return header + payload


@dataclass(eq=False)
class _Link:
    """One proxied connection: the agent's side, the server's side, and what passes downstream."""

    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    pending: bytearray = field(default_factory=bytearray)
    handshake_done: bool = False
    dropping: str | None = None
    """The request whose answer is being replaced by an error."""

    def abort(self) -> None:
        for writer in (self.client, self.server):
            writer.transport.abort()


class FaultProxy:
    """Listens on ``port`` (chosen at :meth:`start`) and forwards to ``upstream_port``."""

    def __init__(self, upstream_port: int, stall_seconds: float = 8.0) -> None:
        self.upstream_port = upstream_port
        self.stall_seconds = stall_seconds
        self.port = 0
        self.links: set[_Link] = set()
        self._armed: str | None = None
        self._released = asyncio.Event()
        self._released.set()
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.injected: list[str] = []

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        """Stop listening, cut every link, and wait for their handlers to end (a handler still
        running when the event loop closes would be cancelled inside asyncio's stream callback)."""
        if self._server is not None:
            self._server.close()
        for link in list(self.links):
            link.abort()
        self._released.set()  # a stall holding a handler ends with the proxy
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=CLOSE_TIMEOUT)

    def disarm(self) -> None:
        """Forget a fault still waiting for its protocol point (its answer ended first)."""
        self._armed = None

    def inject(self, fault: str) -> None:
        """Inject ``fault`` now (``reset``, ``stall``) or at the protocol point it waits for."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
        if fault == "reset":
            for link in list(self.links):
                link.abort()
            self.injected.append(fault)
        elif fault == "stall":
            self._released.clear()
            asyncio.get_running_loop().call_later(self.stall_seconds, self._released.set)
            self.injected.append(fault)
        else:
            self._armed = fault

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            await self._relay(client_reader, client_writer)
        finally:
            self._handlers.discard(handler)

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.transport.abort()  # the server is down: the agent sees a refused session
            return
        link = _Link(client_writer, server_writer)
        self.links.add(link)
        try:
            await asyncio.gather(self._upstream(client_reader, link), self._downstream(server_reader, link))
        finally:
            self.links.discard(link)
            link.abort()

    @staticmethod
    async def _upstream(reader: asyncio.StreamReader, link: _Link) -> None:
        """The agent's bytes to the server; its upgrade request without ``Sec-WebSocket-Extensions``,
        so no compression is agreed and the server's frames stay readable here. Once the agent's side
        ends, the whole link is cut: nothing the server still sends (frames held by a stall, say) is
        forwarded to a connection the agent has left, and no fault lands there."""
        writer = link.server
        with contextlib.suppress(OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            request = await reader.readuntil(b"\r\n\r\n")
            lines = [line for line in request.split(b"\r\n")
                     if not line.lower().startswith(b"sec-websocket-extensions:")]
            writer.write(b"\r\n".join(lines))
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        link.abort()

    async def _downstream(self, reader: asyncio.StreamReader, link: _Link) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while data := await reader.read(65536):
                await self._released.wait()
                if link.client.transport.is_closing():
                    break  # the agent's side was cut (a reset): nothing more reaches it
                if not link.handshake_done:  # the HTTP upgrade response, up to its blank line
                    end = data.find(b"\r\n\r\n")
                    if end < 0:
                        link.client.write(data)
                        continue
                    link.client.write(data[:end + 4])
                    link.handshake_done, data = True, data[end + 4:]
                link.pending += data
                if not await self._forward_frames(link):
                    return
                await link.client.drain()
        link.client.transport.abort()

    async def _forward_frames(self, link: _Link) -> bool:
        """Forward the whole frames in ``link.pending``, injecting an armed fault; False once the
        connection has been cut."""
        while (frame := parse_frame(bytes(link.pending))) is not None:
            opcode, payload, size = frame
            raw = bytes(link.pending[:size])
            del link.pending[:size]
            if self._armed == "mid_frame" and opcode == OPCODE_BINARY:
                self._armed = None
                link.client.write(raw[: size - len(payload) // 2])
                await link.client.drain()
                self.injected.append("mid_frame")
                link.abort()
                return False
            if opcode == OPCODE_TEXT:
                raw = self._text(link, payload, raw)
            elif link.dropping is not None:
                raw = b""  # audio of the answer that was replaced
            link.client.write(raw)
        return True

    def _text(self, link: _Link, payload: bytes, raw: bytes) -> bytes:
        """A text frame as it should reach the agent: replaced, dropped, or as it was."""
        try:
            message = json.loads(payload)
        except ValueError:
            return raw
        request_id = message.get("request_id")
        if link.dropping is not None and request_id == link.dropping:
            if message.get("type") == protocol.SYNTHESIS_COMPLETE:
                link.dropping = None
            return b""
        # The next piece of an answer (its words come just before its audio), or the next answer's start.
        if self._armed == "error_reply" and message.get("type") in (protocol.WORDS, protocol.SYNTHESIS_START):
            self._armed = None
            link.dropping = request_id
            self.injected.append("error_reply")
            return text_frame(protocol.encode_error(request_id, protocol.SYNTHESIS_FAILED,
                                                    "synthesis failed (injected by the fault proxy)"))
        return raw
