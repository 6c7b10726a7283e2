"""The figures of one answer, read off the frames that reach the caller (the ``end`` event's
``metrics``; their meaning is specified in the caller protocol's schema)."""

from __future__ import annotations

import time
from typing import Any

import tts_protocol
from agent.pipeline.frames import AudioFrame, ModelDone, SentenceSent, SynthesisDone, TextFrame


class AnswerMetrics:
    """Milliseconds from the request's arrival to each milestone, and the answer's totals."""

    def __init__(self, started: float | None = None) -> None:
        self.started = time.perf_counter() if started is None else started
        self.marks: dict[str, float] = {}
        self.sentences = 0
        self.audio_bytes = 0
        self.pcm_bytes = 0
        self.truncated = False
        self._ready: dict[int, float] = {}
        self._first_index: int | None = None
        self._first_inference_ms: float | None = None

    def ms(self, at: float | None = None) -> float:
        return round(((time.perf_counter() if at is None else at) - self.started) * 1000, 1)

    def _mark(self, name: str, at: float | None = None) -> None:
        self.marks.setdefault(name, self.ms(at))

    def observe(self, frame: object) -> None:
        if isinstance(frame, TextFrame):
            self._mark("first_text")
        elif isinstance(frame, SentenceSent):
            self.sentences += 1
            self._mark("first_sentence", frame.chunk.at)
            self._ready[frame.chunk.index] = self.ms(frame.chunk.at)
        elif isinstance(frame, AudioFrame):
            self.pcm_bytes += frame.pcm_bytes
            if frame.pcm_bytes and self._first_index is None:
                self._first_index = frame.index
            if frame.data:
                self._mark("first_audio")
                self.audio_bytes += len(frame.data)
        elif isinstance(frame, SynthesisDone):
            if frame.index == self._first_index and self._first_inference_ms is None:
                self._first_inference_ms = frame.stats.get("first_inference_ms")
        elif isinstance(frame, ModelDone):
            self._mark("model_done", frame.at)
            self.truncated = frame.truncated

    def summary(self, *, cancelled: bool = False, stop_ms: float | None = None) -> dict[str, Any]:
        marks = self.marks
        first_audio = marks.get("first_audio")
        ready = None if cancelled or self._first_index is None else self._ready.get(self._first_index)
        inference = None if cancelled else self._first_inference_ms
        overhead = None
        if first_audio is not None and ready is not None and inference is not None:
            overhead = round(first_audio - ready - inference, 1)
        return {
            "time_to_first_text_ms": marks.get("first_text"),
            "time_to_first_audio_ms": first_audio,
            "first_sentence_ms": marks.get("first_sentence"),
            "model_ms": marks.get("model_done"),
            "total_ms": self.ms(),
            "sentences": self.sentences,
            "audio_bytes": self.audio_bytes,
            "audio_seconds": round(tts_protocol.pcm16_seconds(self.pcm_bytes), 3),
            "truncated": self.truncated,
            "cancelled": cancelled,
            "stop_ms": stop_ms,
            # How far first audio was from its physical limit: the chunk's text being ready plus the
            # model's inference for it; what remains is the pipeline's own cost.
            "first_chunk_ready_ms": ready,
            "first_chunk_inference_ms": inference,
            "pipeline_overhead_ms": overhead,
        }
