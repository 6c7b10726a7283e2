"""What a caller asks for (:class:`Options`) and gets (:class:`Answer`), and how each leg's events
become an answer (:class:`Collector`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import tts_protocol
from caller_protocol import DEFAULT_FORMAT, DEFAULT_MODE, AnswerProtocolError, AnswerReader, VoiceRequest, events

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 300.0
"""Seconds an answer may take in total."""
DEFAULT_READ_TIMEOUT = 60.0
"""Seconds without a byte from the agent before giving up."""
OPEN_TIMEOUT = 10.0
"""Seconds to connect to the agent."""


class CallerError(RuntimeError):
    pass


class StreamBroken(CallerError):
    """The connection to the agent ended before the answer's ``end`` or ``error`` event."""


@dataclass(frozen=True)
class Options:
    """Where to ask and how. A local agent at ``url`` unless ``runtime_arn`` names a deployed one."""

    url: str = DEFAULT_URL
    """The local agent's base URL."""
    ws: bool = False
    """The binary ``/ws`` leg (audio as binary frames) instead of SSE."""
    runtime_arn: str | None = None
    """A deployed agent, through AgentCore (boto3's credentials)."""
    qualifier: str | None = None
    """The deployed runtime's endpoint (default: the service's ``DEFAULT``)."""
    region: str | None = None
    """The runtime's region (default: the ARN's)."""
    endpoint_url: str | None = None
    """Another AgentCore endpoint (a local stand-in)."""
    mode: str = DEFAULT_MODE
    voice: str | None = None
    speed: float | None = None
    format: str = DEFAULT_FORMAT
    session_id: str | None = None
    """The AgentCore runtime session: answers of one session continue one conversation."""
    timeout: float = DEFAULT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT

    def request(self, prompt: str) -> VoiceRequest:
        return VoiceRequest(prompt=prompt, mode=self.mode, voice=self.voice,
                            speed=1.0 if self.speed is None else self.speed, format=self.format)


def new_session_id() -> str:
    """An AgentCore runtime session id (the service requires at least 33 characters)."""
    return f"voice-agent-{uuid.uuid4().hex}"


@dataclass
class Answer:
    """One answer as the caller received it; times are milliseconds from sending the request."""

    mode: str
    format: str = DEFAULT_FORMAT
    text: str = ""
    audio: bytearray = field(default_factory=bytearray)
    """The answer's audio stream, in ``format`` (raw samples for ``pcm16``)."""
    sample_rate: int = tts_protocol.SAMPLE_RATE
    sentences: dict[int, str] = field(default_factory=dict)
    audio_by_sentence: dict[int, int] = field(default_factory=dict)
    """Bytes of audio received per sentence index."""
    audio_arrivals: list[tuple[float, int]] = field(default_factory=list)
    """Each audio event as it arrived: (milliseconds from sending the request, bytes)."""
    words: list[dict[str, Any]] = field(default_factory=list)
    """Each word heard, with its sentence's ``index`` and ``start_ms``/``end_ms`` on the answer's audio."""
    event_types: list[str] = field(default_factory=list)
    time_to_first_text_ms: float | None = None
    time_to_first_audio_ms: float | None = None
    total_ms: float | None = None
    cancel_sent_ms: float | None = None
    """When the caller sent ``cancel`` (WebSocket leg only)."""
    server_metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def audio_seconds(self) -> float:
        """Seconds of speech: counted from the samples for ``pcm16``, else as the agent reports it."""
        if self.format == tts_protocol.FORMAT_PCM16:
            return tts_protocol.pcm16_seconds(len(self.audio), self.sample_rate)
        return float(self.server_metrics.get("audio_seconds") or 0.0)

    @property
    def time_to_first_speech_ms(self) -> float | None:
        """When a listener who starts playing at the first audio hears speech: the answer's first
        speech (``tts_protocol.speech_onset``) played at real time from the first audio, or when it
        arrived if that is later. None for formats other than ``pcm16`` or an answer with no speech."""
        if self.format != tts_protocol.FORMAT_PCM16 or self.time_to_first_audio_ms is None:
            return None
        onset = tts_protocol.speech_onset(bytes(self.audio), self.sample_rate)
        if onset is None:
            return None
        received, arrived = 0, self.time_to_first_audio_ms
        for at, size in self.audio_arrivals:
            received, arrived = received + size, at
            if received > onset * tts_protocol.SAMPLE_WIDTH:
                break
        return round(max(self.time_to_first_audio_ms + onset * 1000 / self.sample_rate, arrived), 1)

    def received(self) -> str:
        """What arrived so far, for an error message: the text's length and the audio's duration."""
        audio = (f"{self.audio_seconds:.1f} s of audio" if self.format == tts_protocol.FORMAT_PCM16
                 else f"{len(self.audio):,} bytes of {self.format} audio")
        return f"received so far: {len(self.text)} characters of text and {audio}"

    def summary(self) -> dict[str, Any]:
        return {"mode": self.mode, "format": self.format, "time_to_first_text_ms": self.time_to_first_text_ms,
                "time_to_first_audio_ms": self.time_to_first_audio_ms,
                "time_to_first_speech_ms": self.time_to_first_speech_ms, "total_ms": self.total_ms,
                "audio_seconds": round(self.audio_seconds, 3), "sentences": len(self.sentences), "text": self.text,
                "words": self.words, "server": self.server_metrics}

    def apply(self, event: dict[str, Any], elapsed_ms: float) -> None:
        kind = event["type"]
        self.event_types.append(kind)
        if kind == events.TEXT:
            if self.time_to_first_text_ms is None:
                self.time_to_first_text_ms = elapsed_ms
            self.text += event["text"]
        elif kind == events.SENTENCE:
            self.sentences[event["index"]] = event["text"]
        elif kind == events.WORDS:
            self.words += [{"index": event["index"], **word} for word in event["words"]]
        elif kind == events.AUDIO:
            if self.time_to_first_audio_ms is None:
                self.time_to_first_audio_ms = elapsed_ms
            self.sample_rate = event["sample_rate"]
            self.audio += event["data"]
            self.audio_arrivals.append((elapsed_ms, len(event["data"])))
            self.audio_by_sentence[event["index"]] = self.audio_by_sentence.get(event["index"], 0) + len(event["data"])
        elif kind == events.END:
            self.server_metrics = event["metrics"]
        elif kind == events.ERROR:
            raise CallerError(f"the agent reported an error: {event.get('code')}: {event.get('message')}")


class Collector:
    """One leg's bytes or frames in, whatever their chunking; the :class:`Answer` out."""

    def __init__(self, options: Options, on_event: Callable[[dict[str, Any]], None] | None) -> None:
        self.answer = Answer(mode=options.mode, format=options.format)
        self.reader = AnswerReader()
        self._on_event = on_event
        self._started = time.perf_counter()

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self._started) * 1000, 1)

    def feed_sse(self, chunk: bytes) -> None:
        self._apply(lambda: self.reader.feed_sse(chunk))

    def feed_ws(self, frame: str | bytes) -> None:
        self._apply(lambda: self.reader.feed_ws(frame))

    def _apply(self, read: Callable[[], list[dict[str, Any]]]) -> None:
        try:
            read_events = read()
        except AnswerProtocolError as exc:
            raise CallerError(str(exc)) from exc
        for event in read_events:
            self.answer.apply(event, self.elapsed_ms())
            if self._on_event is not None:
                self._on_event(event)

    def finish(self) -> Answer:
        if not self.reader.finished:
            raise self.broken()
        try:
            self.reader.close()
        except AnswerProtocolError as exc:
            raise CallerError(str(exc)) from exc
        self.answer.total_ms = self.elapsed_ms()
        return self.answer

    def broken(self, cause: BaseException | None = None) -> StreamBroken:
        """The error for a stream that ended before the answer's ``end`` or ``error`` event."""
        because = f" ({cause})" if cause is not None and str(cause) else ""
        return StreamBroken(f"the agent closed the stream before the answer ended{because}; "
                            f"{self.answer.received()}")


def write_audio(path: str, answer: Answer) -> None:
    """The answer's audio as a playable file: ``pcm16`` wrapped in WAV, other formats as streamed."""
    data = bytes(answer.audio)
    if answer.format == tts_protocol.FORMAT_PCM16:
        data = tts_protocol.pcm16_to_wav(data, answer.sample_rate)
    with open(path, "wb") as handle:
        handle.write(data)
