"""Frames -> the caller's events (leg 1), numbered, with the answer's figures and a record of what
the caller was sent.

Guarantees: ``start`` first; then one event per text delta, chunk handed to synthesis, stretch of
timed words, and non-empty piece of audio, in the order the frames arrive; then exactly one
``end`` or ``error``.
:attr:`CallerStage.said` is the text of every chunk whose audio (some of it) the caller was sent;
:meth:`CallerStage.heard` is what the caller heard by a point of its playback, to the word: what a
conversation keeps of an answer that did not complete.
"""

from __future__ import annotations

from typing import Any

import tts_protocol
from agent.audio_encoding import FORMATS
from agent.pipeline.frames import (
    AudioFrame,
    ErrorFrame,
    ModelDone,
    SentenceSent,
    SynthesisDone,
    TextFrame,
    WordsFrame,
)
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
        self._words: dict[int, list[tts_protocol.Word]] = {}
        self._complete: set[int] = set()
        """Chunks whose audio has all passed."""
        self._spans: dict[int, list[float]] = {}
        """Each chunk's audio as the caller plays it: [start, end] in ms of the answer's audio."""
        self._played_to_ms = FORMATS[request.format].delay_samples * 1000 / tts_protocol.SAMPLE_RATE

    @property
    def said(self) -> str:
        return " ".join(text for index, text in sorted(self._sentences.items()) if index <= self._heard_up_to)

    @property
    def audio_ms(self) -> float:
        """Where the answer's audio ends, as the caller plays it."""
        return self._played_to_ms

    def heard(self, played_ms: float) -> str:
        """What the caller heard by ``played_ms`` of the answer's audio: every chunk whose audio it
        was sent in full and had played to its end, then, of the chunk playing at that point, the
        words whose middle had been played and sent (the whole chunk when its words are not timed).
        Chunks with nothing to say count as heard once a later chunk's audio has begun."""
        parts: list[str] = []
        unspoken: list[str] = []
        for index, written in sorted(self._sentences.items()):
            span = self._spans.get(index)
            if span is None:
                unspoken.append(written)
                continue
            start, end = span
            if start >= played_ms:
                break
            parts += unspoken
            unspoken = []
            if index in self._complete and end <= played_ms:
                parts.append(written)
                continue
            words = self._words.get(index)
            if not words:
                parts.append(written)
            else:
                reached = min(played_ms, end)  # nothing plays past the audio the caller was sent
                parts += [word.word for word in words if (word.start_ms + word.end_ms) / 2 <= reached]
            break
        return " ".join(part for part in parts if part)

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
        if isinstance(frame, SynthesisDone):
            self._complete.add(frame.index)
        if isinstance(frame, WordsFrame):
            self._words.setdefault(frame.index, []).extend(frame.words)
            return events.words(frame.index, [(word.word, word.start_ms, word.end_ms) for word in frame.words])
        if isinstance(frame, AudioFrame) and frame.pcm_bytes:
            span = self._spans.setdefault(frame.index, [self._played_to_ms, self._played_to_ms])
            self._played_to_ms += frame.pcm_bytes / tts_protocol.SAMPLE_WIDTH * 1000 / tts_protocol.SAMPLE_RATE
            span[1] = self._played_to_ms
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
