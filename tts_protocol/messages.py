"""The TTS session's messages (leg 3 of the design), with no I/O: every literal, code and limit of
the protocol, how each message is encoded, and how each frame is parsed.

The message sequence is described in the package's docstring (``tts_protocol``). Control or audio
is decided by parsing the whole payload as a JSON object with a known ``type``
(:func:`parse_server_message`), never by looking at its first byte: PCM data can begin with ``{``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BIDI_PATH",
    "SAMPLE_RATE",
    "FORMAT_PCM16",
    "SUPPORTED_FORMATS",
    "MAX_TEXT_CHARS",
    "MAX_MESSAGE_BYTES",
    "MAX_CONTROL_BYTES",
    "MAX_WORD_CHARS",
    "MIN_SPEED",
    "MAX_SPEED",
    "SYNTHESIZE",
    "CANCEL",
    "CLOSE",
    "SYNTHESIS_START",
    "WORDS",
    "SYNTHESIS_COMPLETE",
    "ERROR",
    "BAD_REQUEST",
    "UNKNOWN_TYPE",
    "MESSAGE_TOO_LARGE",
    "TEXT_TOO_LONG",
    "EMPTY_TEXT",
    "UNKNOWN_VOICE",
    "BAD_SPEED",
    "UNSUPPORTED_FORMAT",
    "QUEUE_FULL",
    "CANCELLED",
    "SYNTHESIS_FAILED",
    "OVERLOADED",
    "ERROR_CODES",
    "CONNECTION_FAILED",
    "TIMEOUT",
    "TOO_MANY_REQUESTS",
    "ProtocolError",
    "Synthesize",
    "Cancel",
    "Close",
    "ClientMessage",
    "encode_synthesize",
    "encode_cancel",
    "encode_close",
    "parse_client_message",
    "SynthesisStart",
    "Word",
    "Words",
    "SynthesisComplete",
    "Error",
    "ServerMessage",
    "encode_synthesis_start",
    "encode_words",
    "encode_synthesis_complete",
    "encode_error",
    "parse_server_message",
]

BIDI_PATH = "/invocations-bidirectional-stream"
"""The container's WebSocket route, as SageMaker's bidirectional streaming contract names it."""

SAMPLE_RATE = 24_000
"""Kokoro-82M produces 24 kHz audio."""

FORMAT_PCM16 = "pcm16"
SUPPORTED_FORMATS = (FORMAT_PCM16,)

MAX_TEXT_CHARS = 5_000
"""Longest text one synthesize request may carry. A whole batch-mode answer must fit; Kokoro
itself takes at most 510 phonemes per call, so the server splits longer text into pieces."""

MAX_MESSAGE_BYTES = 64 * 1024
"""Largest client message accepted. ``MAX_TEXT_CHARS`` of text is at most 20 KB of UTF-8 even
when every character needs four bytes, so this leaves room for JSON escaping and the other
fields; anything larger is refused before it is parsed."""

MAX_CONTROL_BYTES = 4_096
"""Server control messages are short; a server payload larger than this is always audio, which
keeps :func:`parse_server_message` from trying to JSON-decode every audio frame."""

MAX_WORD_CHARS = 100
"""Longest word a ``words`` message spells out; a longer one (a URL read as one word) is cut, so a
message of ``words`` always fits in ``MAX_CONTROL_BYTES``."""

_WORDS_MESSAGE_BYTES = 3_000
"""Where :func:`encode_words` starts another message: below ``MAX_CONTROL_BYTES`` with room for
one more word at its longest."""

MIN_SPEED = 0.5
MAX_SPEED = 2.0

# Message types.
SYNTHESIZE = "synthesize"
CANCEL = "cancel"
CLOSE = "close"
SYNTHESIS_START = "synthesis_start"
WORDS = "words"
SYNTHESIS_COMPLETE = "synthesis_complete"
ERROR = "error"

# Error codes, each with what it means (the protocol docs' table is generated from ERROR_CODES).
BAD_REQUEST = "bad_request"
UNKNOWN_TYPE = "unknown_type"
MESSAGE_TOO_LARGE = "message_too_large"
TEXT_TOO_LONG = "text_too_long"
EMPTY_TEXT = "empty_text"
UNKNOWN_VOICE = "unknown_voice"
BAD_SPEED = "bad_speed"
UNSUPPORTED_FORMAT = "unsupported_format"
QUEUE_FULL = "queue_full"
CANCELLED = "cancelled"
SYNTHESIS_FAILED = "synthesis_failed"
OVERLOADED = "overloaded"
CONNECTION_FAILED = "connection_failed"
TIMEOUT = "timeout"
TOO_MANY_REQUESTS = "too_many_requests"

ERROR_CODES = {
    BAD_REQUEST: "the message is not a JSON object, has the wrong field types, or lacks a required field",
    UNKNOWN_TYPE: "the message's `type` is not `synthesize`, `cancel` or `close`",
    MESSAGE_TOO_LARGE: f"the message exceeds {MAX_MESSAGE_BYTES:,} bytes (refused before it is parsed)",
    TEXT_TOO_LONG: f"the text exceeds {MAX_TEXT_CHARS:,} characters",
    EMPTY_TEXT: "the text is empty, or has nothing to speak",
    UNKNOWN_VOICE: "the server has no voice of that name (the message lists those it has)",
    BAD_SPEED: f"`speed` is not a number from {MIN_SPEED} to {MAX_SPEED}",
    UNSUPPORTED_FORMAT: f"`format` is not one of {', '.join(SUPPORTED_FORMATS)}",
    QUEUE_FULL: "the session already has its limit of requests waiting; answered at once, not in turn",
    CANCELLED: "the request was cancelled by a `cancel` message",
    SYNTHESIS_FAILED: "the model failed on this request; the session goes on",
    OVERLOADED: "the server is at its session limit: the session is refused (then closed with 1013, \"try again "
                "later\") rather than queued without bound",
    CONNECTION_FAILED: "(raised by the client, never sent) the session could not be opened, or was lost and could "
                       "not be resumed",
    TIMEOUT: "(raised by the client, never sent) nothing arrived for a request within the client's wait",
    TOO_MANY_REQUESTS: "(raised by the client, never sent) the client already has its limit of requests in flight",
}


class ProtocolError(ValueError):
    """A client message the server must answer with an ``error`` message.

    ``request_id`` is set when the message was readable enough to name its request.
    """

    def __init__(self, code: str, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


# Client -> server ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Synthesize:
    request_id: str
    text: str
    voice: str | None = None
    speed: float = 1.0
    format: str = FORMAT_PCM16
    windows: bool = False  # rendered in windows: first audio sooner, more inference in all


@dataclass(frozen=True)
class Cancel:
    pass


@dataclass(frozen=True)
class Close:
    pass


ClientMessage = Synthesize | Cancel | Close


def encode_synthesize(request: Synthesize) -> str:
    message: dict[str, Any] = {
        "type": SYNTHESIZE,
        "request_id": request.request_id,
        "text": request.text,
        "speed": request.speed,
        "format": request.format,
    }
    if request.voice is not None:
        message["voice"] = request.voice
    if request.windows:
        message["windows"] = True
    return json.dumps(message, ensure_ascii=False)


def encode_cancel() -> str:
    return json.dumps({"type": CANCEL})


def encode_close() -> str:
    return json.dumps({"type": CLOSE})


def _decode_json_object(payload: str | bytes) -> dict[str, Any] | None:
    """The payload as a JSON object, or None when it is not one (including invalid UTF-8)."""
    try:
        text = payload.decode("utf-8") if isinstance(payload, (bytes, bytearray, memoryview)) else payload
        value = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def parse_client_message(payload: str | bytes, *, default_request_id: str) -> ClientMessage:
    """Parse one client message from a text frame (``str``) or a binary frame (``bytes``).

    ``default_request_id`` names a synthesize request that carries no ``request_id``.
    Raises :class:`ProtocolError` for anything that is not a valid message; the field checks that
    need server state (voice names) are left to the server.
    """
    if len(payload) > MAX_MESSAGE_BYTES:
        raise ProtocolError(MESSAGE_TOO_LARGE, f"message exceeds {MAX_MESSAGE_BYTES} bytes")
    message = _decode_json_object(payload)
    if message is None:
        raise ProtocolError(BAD_REQUEST, "message is not a UTF-8 JSON object")
    kind = message.get("type", SYNTHESIZE if "text" in message else None)
    if kind == CANCEL:
        return Cancel()
    if kind == CLOSE:
        return Close()
    if kind != SYNTHESIZE:
        raise ProtocolError(UNKNOWN_TYPE, f"unknown message type {kind!r}; expected one of "
                            f"{SYNTHESIZE!r}, {CANCEL!r}, {CLOSE!r}")

    request_id = message.get("request_id", default_request_id)
    if not isinstance(request_id, str) or not request_id or len(request_id) > 128:
        raise ProtocolError(BAD_REQUEST, "request_id must be a non-empty string of at most 128 characters")
    text = message.get("text")
    if not isinstance(text, str):
        raise ProtocolError(BAD_REQUEST, "text must be a string", request_id)
    if not text.strip():
        raise ProtocolError(EMPTY_TEXT, "text is empty", request_id)
    if len(text) > MAX_TEXT_CHARS:
        raise ProtocolError(TEXT_TOO_LONG, f"text has {len(text)} characters; at most {MAX_TEXT_CHARS}", request_id)
    voice = message.get("voice")
    if voice is not None and not isinstance(voice, str):
        raise ProtocolError(BAD_REQUEST, "voice must be a string", request_id)
    speed = message.get("speed", 1.0)
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not math.isfinite(speed):
        raise ProtocolError(BAD_SPEED, "speed must be a number", request_id)
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise ProtocolError(BAD_SPEED, f"speed must be between {MIN_SPEED} and {MAX_SPEED}", request_id)
    fmt = message.get("format", FORMAT_PCM16)
    if fmt not in SUPPORTED_FORMATS:
        raise ProtocolError(UNSUPPORTED_FORMAT, f"format must be one of {SUPPORTED_FORMATS}", request_id)
    if not isinstance(windows := message.get("windows", False), bool):
        raise ProtocolError(BAD_REQUEST, "windows must be true or false", request_id)
    return Synthesize(request_id=request_id, text=text, voice=voice, speed=float(speed), format=fmt, windows=windows)


# Server -> client ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SynthesisStart:
    request_id: str
    sample_rate: int
    format: str


@dataclass(frozen=True)
class SynthesisComplete:
    request_id: str
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Error:
    request_id: str | None
    code: str
    message: str


@dataclass(frozen=True)
class Word:
    """A word of the request's text and when it is spoken: milliseconds from the start of the
    request's audio (its first sound to its last; the pause after a comma is between words)."""

    word: str
    start_ms: float
    end_ms: float


@dataclass(frozen=True)
class Words:
    """When each of the next words is spoken. Sent before the audio that speaks them."""

    request_id: str
    words: tuple[Word, ...]


ServerMessage = SynthesisStart | Words | SynthesisComplete | Error


def encode_synthesis_start(request_id: str, sample_rate: int = SAMPLE_RATE, fmt: str = FORMAT_PCM16) -> str:
    return json.dumps({"type": SYNTHESIS_START, "request_id": request_id, "sample_rate": sample_rate,
                       "format": fmt})


def encode_words(request_id: str, words: list[Word] | tuple[Word, ...]) -> list[str]:
    """The ``words`` messages for ``words``, in order: as many as keep each under
    ``MAX_CONTROL_BYTES`` (none for no words)."""
    messages: list[str] = []
    batch: list[dict[str, Any]] = []
    size = 0
    for word in words:
        entry = {"word": word.word[:MAX_WORD_CHARS], "start_ms": word.start_ms, "end_ms": word.end_ms}
        size += len(json.dumps(entry, ensure_ascii=False).encode())
        batch.append(entry)
        if size >= _WORDS_MESSAGE_BYTES:
            messages.append(json.dumps({"type": WORDS, "request_id": request_id, "words": batch}, ensure_ascii=False))
            batch, size = [], 0
    if batch:
        messages.append(json.dumps({"type": WORDS, "request_id": request_id, "words": batch}, ensure_ascii=False))
    return messages


def encode_synthesis_complete(request_id: str, **stats: Any) -> str:
    return json.dumps({"type": SYNTHESIS_COMPLETE, "request_id": request_id, **stats})


def encode_error(request_id: str | None, code: str, message: str) -> str:
    return json.dumps({"type": ERROR, "request_id": request_id, "code": code, "message": message})


def parse_server_message(payload: str | bytes) -> ServerMessage | bytes:
    """Classify one server frame: a control message, or audio bytes.

    A text frame must be a control message. A binary frame is a control message only when the whole
    payload is a JSON object with a known ``type``; otherwise it is audio. Raises ``ValueError`` for
    a text frame that is not a known control message.
    """
    if isinstance(payload, str):
        message = _decode_json_object(payload)
        parsed = _server_message(message) if message is not None else None
        if parsed is None:
            raise ValueError(f"unexpected text frame from the TTS server: {payload[:200]!r}")
        return parsed
    data = bytes(payload)
    if len(data) <= MAX_CONTROL_BYTES:
        message = _decode_json_object(data)
        if message is not None:
            parsed = _server_message(message)
            if parsed is not None:
                return parsed
    return data


def _server_message(message: dict[str, Any]) -> ServerMessage | None:
    kind = message.get("type")
    request_id = message.get("request_id")
    if kind == SYNTHESIS_START and isinstance(request_id, str):
        return SynthesisStart(request_id, int(message.get("sample_rate", SAMPLE_RATE)),
                              str(message.get("format", FORMAT_PCM16)))
    if kind == WORDS and isinstance(request_id, str):
        words = _words(message.get("words"))
        return Words(request_id, words) if words is not None else None
    if kind == SYNTHESIS_COMPLETE and isinstance(request_id, str):
        stats = {k: v for k, v in message.items() if k not in ("type", "request_id")}
        return SynthesisComplete(request_id, stats)
    if kind == ERROR:
        return Error(request_id if isinstance(request_id, str) else None, str(message.get("code", "")),
                     str(message.get("message", "")))
    return None


def _words(entries: Any) -> tuple[Word, ...] | None:
    """The words of a ``words`` message, or None when they are malformed."""
    if not isinstance(entries, list):
        return None
    words = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("word"), str):
            return None
        start, end = entry.get("start_ms"), entry.get("end_ms")
        if not all(isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                   for value in (start, end)):
            return None
        words.append(Word(entry["word"], float(start), float(end)))
    return tuple(words)
