"""Frames -> the caller's events (leg 1), numbered, with the answer's figures and a record of what
the caller was sent.

Guarantees: ``start`` first; then one event per text delta, chunk handed to synthesis, and
non-empty piece of audio, in the order the frames arrive; then exactly one ``end`` or ``error``.
:attr:`CallerStage.said` is the text of every chunk whose audio (some of it) the caller was sent:
what a conversation keeps of an answer that did not complete.
"""

from __future__ import annotations

from typing import Any

import tts_protocol
from agent.pipeline.frames import AudioFrame, ErrorFrame, ModelDone, SentenceSent, TextFrame
from agent.pipeline.metrics import AnswerMetrics
from caller_protocol import VoiceRequest, events


class CallerStage:
    def __init__(self, request: VoiceRequest, session_id: str | None, turn: int) -> None:
        self.request = request
        self.session_id = session_id
        self.turn = turn
        self.metrics = AnswerMetrics()
        self._sentences: dict[int, str] = {}
        self._heard_up_to = -1

    @property
    def said(self) -> str:
        return " ".join(text for index, text in sorted(self._sentences.items()) if index <= self._heard_up_to)

    def start(self) -> dict[str, Any]:
        return events.start(self.request.mode, tts_protocol.SAMPLE_RATE, self.request.format, self.session_id,
                            self.turn)

    def event(self, frame: object) -> dict[str, Any] | None:
        """The caller's event for ``frame``, or None when it has none of its own."""
        self.metrics.observe(frame)
        if isinstance(frame, TextFrame):
            return events.text(frame.text)
        if isinstance(frame, SentenceSent):
            chunk = frame.chunk
            self._sentences[chunk.index] = chunk.written
            return events.sentence(chunk.index, chunk.written, chunk.speech)
        if isinstance(frame, AudioFrame) and frame.data:
            self._heard_up_to = max(self._heard_up_to, frame.index)
            return events.audio(frame.index, frame.data, tts_protocol.SAMPLE_RATE)
        if isinstance(frame, ModelDone):
            return events.end(self.metrics.summary())
        if isinstance(frame, ErrorFrame):
            return events.error(frame.code, frame.message)
        return None

    def cancelled(self, stop_ms: float) -> dict[str, Any]:
        return events.end(self.metrics.summary(cancelled=True, stop_ms=stop_ms))

    def failed(self, code: str, message: str) -> dict[str, Any]:
        return events.error(code, message)
