"""The events of a spoken answer (leg 1), with no I/O: their types and error codes, how each is
made, and how each leg frames them.

Every field of every event is specified once, in ``events.schema.json`` beside this module (JSON
Schema 2020-12, with a description per field); ``docs/caller-protocol.md`` shows it as tables,
generated from the schema. In short: an answer is ``start``, then ``text``, ``sentence``,
``words`` and ``audio`` events as they happen (a chunk's ``words`` before its audio), then exactly
one ``end`` or ``error``; every event has ``type`` and ``seq`` (0, 1, 2, ... within the answer).

Framing: over SSE each event is one ``data: {json}`` block, audio as Base64 (:func:`to_sse`);
over ``/ws`` each event is one text message, and an audio event carries ``bytes`` (a length)
instead of ``audio``, its bytes following at once as one binary frame (:func:`split_audio`).
"""

from __future__ import annotations

import base64
import importlib.resources
import json
from functools import cache
from typing import Any

START = "start"
TEXT = "text"
SENTENCE = "sentence"
WORDS = "words"
AUDIO = "audio"
END = "end"
ERROR = "error"
TERMINAL = (END, ERROR)

INVALID_REQUEST = "invalid_request"
TTS_FAILED = "tts_failed"
MODEL_FAILED = "model_failed"
SHUTTING_DOWN = "shutting_down"
ERROR_CODES = {
    INVALID_REQUEST: "the request was refused (the message says which field and why), or the TTS server does not "
                     "know the voice",
    TTS_FAILED: "speech synthesis failed: the TTS session could not be opened, was lost for good, or stalled",
    MODEL_FAILED: "the language model failed: its stream broke, or (the local model) its process died",
    SHUTTING_DOWN: "the agent is stopping (a new deployment, a scale-in, `docker stop`): the answer did not finish "
                   "within the shutdown grace period, or began after it started; ask again",
}
"""Each error code, with what it means (the docs' table is generated from it)."""


@cache
def schema() -> dict[str, Any]:
    """The events' JSON Schema, the one specification of every field."""
    return json.loads((importlib.resources.files("caller_protocol") / "events.schema.json").read_text())


def start(mode: str, sample_rate: int, fmt: str, session_id: str | None, turn: int) -> dict[str, Any]:
    return {"type": START, "mode": mode, "sample_rate": sample_rate, "format": fmt, "session_id": session_id,
            "turn": turn}


def text(delta: str) -> dict[str, Any]:
    return {"type": TEXT, "text": delta}


def sentence(index: int, written: str, speech: str) -> dict[str, Any]:
    return {"type": SENTENCE, "index": index, "text": written, "speech": speech}


def words(index: int, timed: list[tuple[str, float, float]]) -> dict[str, Any]:
    """When each word of chunk ``index`` is heard, as (word, start_ms, end_ms) on the answer's audio."""
    return {"type": WORDS, "index": index,
            "words": [{"word": word, "start_ms": start, "end_ms": end} for word, start, end in timed]}


def audio(index: int, data: bytes, sample_rate: int) -> dict[str, Any]:
    """An audio event as the pipeline yields it: ``audio`` holds the raw bytes. Each leg frames
    it its own way: :func:`to_sse` (Base64) or :func:`split_audio` (a binary frame)."""
    return {"type": AUDIO, "index": index, "audio": data, "sample_rate": sample_rate}


def end(metrics: dict[str, Any]) -> dict[str, Any]:
    return {"type": END, "metrics": metrics}


def error(code: str, message: str) -> dict[str, Any]:
    return {"type": ERROR, "code": code, "message": message}


def to_json(event: dict[str, Any]) -> dict[str, Any]:
    """The event as JSON-safe data: an audio event's bytes as Base64 text."""
    if event["type"] == AUDIO and isinstance(event["audio"], bytes):
        return {**event, "audio": base64.b64encode(event["audio"]).decode("ascii")}
    return event


def to_sse(event: dict[str, Any]) -> bytes:
    """The event as one Server-Sent Events block: ``data: {json}`` and a blank line."""
    return b"data: " + json.dumps(to_json(event), ensure_ascii=False).encode("utf-8") + b"\n\n"


def split_audio(event: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """An audio event for a binary leg: a JSON header (``bytes`` instead of ``audio``) and the bytes
    themselves, sent as the next binary frame."""
    data = event["audio"]
    header = {key: value for key, value in event.items() if key != "audio"}
    return {**header, "bytes": len(data)}, data


def decode_audio(event: dict[str, Any]) -> bytes:
    return base64.b64decode(event["audio"], validate=True)
