"""The caller's side of one answer as a state machine, with no I/O: bytes or frames in, whatever
their chunking, checked events out.

:class:`SSEDecoder` reassembles ``text/event-stream`` bytes split anywhere by the transport
(inside a ``data:`` line, inside a multi-byte character, between ``\\r`` and ``\\n``).
:class:`AnswerReader` turns either leg's framing into the same events: an audio event's bytes are
in ``event["data"]`` whichever leg carried them, and nothing may follow the answer's last event.
``voice_agent.caller`` drives it over HTTP, AgentCore and WebSockets; the tests and fuzzers can
drive it over anything.
"""

from __future__ import annotations

import json
from typing import Any

from caller_protocol import events

MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longest SSE line accepted (a Base64 audio event of a long batch answer is a few MB)."""


class AnswerProtocolError(ValueError):
    """What the agent sent is not a well-formed answer."""


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder: feed bytes as they arrive, get each event's data.

    Follows the SSE rules the agent's stream uses: lines end in ``\\n`` or ``\\r\\n``; ``data:``
    lines (one optional space after the colon) accumulate, joined by ``\\n``; a blank line
    dispatches the event; lines starting with ``:`` are comments; other fields are ignored.
    Memory is bounded by ``max_line_bytes``.
    """

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._pending = bytearray()
        self._data: list[str] = []
        self._max_line_bytes = max_line_bytes

    def feed(self, chunk: bytes) -> list[str]:
        self._pending += chunk
        dispatched: list[str] = []
        while (newline := self._pending.find(b"\n")) >= 0:
            raw = bytes(self._pending[:newline])
            del self._pending[:newline + 1]
            line = raw.removesuffix(b"\r").decode("utf-8")
            if not line:
                if self._data:
                    dispatched.append("\n".join(self._data))
                    self._data = []
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                if name == "data":
                    self._data.append(value.removeprefix(" "))
        if len(self._pending) > self._max_line_bytes:
            raise AnswerProtocolError(f"an SSE line exceeds {self._max_line_bytes} bytes")
        return dispatched

    def close(self) -> None:
        """End of stream: an event not terminated by a blank line is an error, not silently dropped."""
        if self._pending.strip() or self._data:
            raise AnswerProtocolError("the event stream ended in the middle of an event")


class AnswerReader:
    """One answer's events from SSE bytes (:meth:`feed_sse`) or ``/ws`` frames (:meth:`feed_ws`)."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self._audio_header: dict[str, Any] | None = None
        self.finished = False
        """The answer's ``end`` or ``error`` has been read."""

    def feed_sse(self, chunk: bytes) -> list[dict[str, Any]]:
        read = []
        for data in self._sse.feed(chunk):
            event = self._event(data)
            if event["type"] == events.AUDIO:
                event["data"] = events.decode_audio(event)
            read.append(self._accept(event))
        return read

    def feed_ws(self, frame: str | bytes) -> list[dict[str, Any]]:
        """A ``/ws`` frame: a text message is an event; an audio event's binary frame follows it."""
        if self._audio_header is not None:
            header, self._audio_header = self._audio_header, None
            if not isinstance(frame, bytes):
                raise AnswerProtocolError("an audio event was not followed by its binary frame")
            if len(frame) != header.get("bytes"):
                raise AnswerProtocolError(f"audio header announced {header.get('bytes')} bytes, got {len(frame)}")
            return [self._accept({**header, "data": frame})]
        if not isinstance(frame, str):
            raise AnswerProtocolError("a binary frame arrived without an audio event before it")
        event = self._event(frame)
        if event["type"] == events.AUDIO:
            self._audio_header = event
            return []
        return [self._accept(event)]

    def close(self) -> None:
        """The stream ended; raises :class:`AnswerProtocolError` if the answer had not."""
        if not self.finished:
            raise AnswerProtocolError("the answer ended without an end or error event")
        self._sse.close()

    def _accept(self, event: dict[str, Any]) -> dict[str, Any]:
        if self.finished:
            raise AnswerProtocolError(f"a {event['type']} event after the answer's end")
        self.finished = event["type"] in events.TERMINAL
        return event

    @staticmethod
    def _event(data: str) -> dict[str, Any]:
        try:
            event = json.loads(data)
        except ValueError as exc:
            raise AnswerProtocolError(f"an event is not JSON: {data[:200]!r}") from exc
        if not isinstance(event, dict) or "type" not in event:
            # The runtime itself reports a failure inside the stream as {"error": ..., "error_type": ...}.
            raise AnswerProtocolError(f"unexpected event from the agent: {data[:500]}")
        return event
