"""The client side of one TTS session as a state machine, with no I/O.

Feed it what the server sent (:meth:`ClientSession.receive`) and get back events; ask it for the
messages to send (:meth:`ClientSession.synthesize`, :meth:`cancel`, :meth:`close`). It keeps the
state every client of the protocol needs and no client may keep on its own: the order of the
requests in flight, which one is receiving audio, how much audio each has delivered (so that after
a reconnection every unfinished request is sent again and only audio not yet delivered is passed
on), and that each request gets exactly one final reply. ``agent.tts_client`` drives it over a
WebSocket or SageMaker transport; the tests and the benchmarks' fuzzers drive it over raw sockets.

Guarantees:

- :class:`Audio` events carry each byte of a request's audio once, in order, across reconnections
  (resuming is exact because Kokoro is deterministic for a given text, voice, speed and build);
  :class:`Words` events likewise carry each ``words`` message once, before the audio it times.
- Every request tracked ends with exactly one :class:`Completed` or :class:`Failed`; a server
  message that breaks the protocol (audio outside a synthesis, a reply for an unknown request, a
  second final reply) raises :class:`ProtocolViolation` and changes nothing.
- :class:`Refused` (the server is at its session limit) fails every request in flight at once.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

from tts_protocol import messages as m


class ProtocolViolation(ValueError):
    """The server sent something the protocol does not allow at this point."""


Started = m.SynthesisStart
"""A request's audio begins (reported once, however often the request is resent)."""

Words = m.Words
"""When each of the next words of a request is spoken (reported once, however often it is resent)."""
Completed = m.SynthesisComplete
"""A request's final reply: all its audio was delivered; ``stats`` are the server's figures."""
Failed = m.Error
"""A request's final reply: the server (or the lost session) failed it with ``code``."""


@dataclass(frozen=True)
class Audio:
    request_id: str
    data: bytes


@dataclass(frozen=True)
class Refused:
    """The server refused the whole session (``overloaded``); every request in flight fails with it."""

    error: m.Error


@dataclass(frozen=True)
class Notice:
    """An error the server could not tie to any request (a message it could not read)."""

    error: m.Error


Event = Started | Words | Audio | Completed | Failed | Refused | Notice


@dataclass
class _Request:
    request: m.Synthesize
    delivered: int = 0
    """Audio bytes passed on so far, over every attempt."""
    skip: int = 0
    """Audio bytes of the current attempt still to drop: delivered by an earlier attempt."""
    words_delivered: int = 0
    """``words`` messages passed on so far, over every attempt."""
    words_skip: int = 0
    """``words`` messages of the current attempt still to drop."""
    started: bool = False


@dataclass
class ClientSession:
    """``session.synthesize("Hello.")`` -> (request id, message to send); ``session.receive(frame)``
    -> events. Not thread-safe; one per transport session, kept across its reconnections."""

    id_prefix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    _pending: dict[str, _Request] = field(default_factory=dict)
    _current: str | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def pending(self) -> tuple[str, ...]:
        """Requests awaiting their final reply, in the order they were sent."""
        return tuple(self._pending)

    def synthesize(self, text: str, *, voice: str | None = None, speed: float = 1.0,
                   request_id: str | None = None, windows: bool = False) -> tuple[str, str]:
        """Track a new request; returns its id and the message to send (sent again as it is after
        a reconnection, so the server renders it the same way: the skipped audio lines up)."""
        request_id = request_id or f"{self.id_prefix}-{next(self._ids)}"
        if request_id in self._pending:
            raise ValueError(f"request {request_id!r} is already in flight")
        request = m.Synthesize(request_id=request_id, text=text, voice=voice, speed=speed, windows=windows)
        self._pending[request_id] = _Request(request)
        return request_id, m.encode_synthesize(request)

    def track(self, request_id: str) -> None:
        """Expect replies for a request sent by other means (a raw message in a test or fuzzer)."""
        self._pending.setdefault(request_id, _Request(m.Synthesize(request_id=request_id, text="?")))

    @staticmethod
    def cancel() -> str:
        return m.encode_cancel()

    @staticmethod
    def close() -> str:
        return m.encode_close()

    def resend(self) -> list[str]:
        """After the transport was replaced: the messages that send every unfinished request again,
        in order. Audio each had delivered is dropped from the new attempt's stream."""
        self._current = None
        for state in self._pending.values():
            state.skip = state.delivered
            state.words_skip = state.words_delivered
        return [m.encode_synthesize(state.request) for state in self._pending.values()]

    def fail_all(self, code: str, message: str) -> list[m.Error]:
        """The session is lost: every request in flight fails, in order."""
        failed = [m.Error(request_id, code, message) for request_id in self._pending]
        self._pending.clear()
        self._current = None
        return failed

    def receive(self, frame: str | bytes) -> list[Event]:
        """The events one server frame means; raises :class:`ProtocolViolation` for a frame the
        protocol does not allow here."""
        try:
            message = m.parse_server_message(frame)
        except ValueError as exc:
            raise ProtocolViolation(str(exc)) from exc
        if isinstance(message, bytes):
            return self._audio(message)
        if isinstance(message, m.SynthesisStart):
            state = self._known(message.request_id, "synthesis_start")
            self._current = message.request_id
            if state.started:
                return []  # a resumed request: its start was already reported
            state.started = True
            return [message]
        if isinstance(message, m.Words):
            return self._words(message)
        if isinstance(message, m.SynthesisComplete):
            self._known(message.request_id, "synthesis_complete")
            self._finish(message.request_id)
            return [message]
        return self._error(message)

    def _audio(self, data: bytes) -> list[Event]:
        if self._current is None:
            raise ProtocolViolation("audio frame outside any synthesis")
        state = self._pending[self._current]
        if state.skip:
            dropped = min(state.skip, len(data))
            state.skip -= dropped
            data = data[dropped:]
            if not data:
                return []
        state.delivered += len(data)
        return [Audio(self._current, data)]

    def _words(self, message: m.Words) -> list[Event]:
        state = self._known(message.request_id, "words")
        if self._current != message.request_id:
            raise ProtocolViolation(f"words for {message.request_id!r} outside its synthesis")
        if state.words_skip:
            state.words_skip -= 1
            return []
        state.words_delivered += 1
        return [message]

    def _error(self, error: m.Error) -> list[Event]:
        if error.request_id is not None and error.request_id in self._pending:
            self._finish(error.request_id)
            return [error]
        if error.code == m.OVERLOADED:
            return [Refused(error), *self.fail_all(error.code, error.message)]
        return [Notice(error)]

    def _known(self, request_id: str, kind: str) -> _Request:
        state = self._pending.get(request_id)
        if state is None:
            raise ProtocolViolation(f"{kind} for unknown request {request_id!r}")
        return state

    def _finish(self, request_id: str) -> None:
        del self._pending[request_id]
        if self._current == request_id:
            self._current = None
