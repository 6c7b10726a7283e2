"""The events the agent streams to its caller (leg 1), one JSON-safe dict each.

Over HTTP each event is one SSE ``data: {json}`` line. Every event has ``type`` and ``seq`` (0, 1,
2, ... within one answer). An answer ends with exactly one ``end`` (success) or ``error`` event.

- ``start``: ``mode``, ``sample_rate``, ``format`` of the audio to come (``pcm16``, ``wav``,
  ``mp3``, ``aac``, ``opus``: see ``agent.audio_encoding``); ``session_id`` (the
  AgentCore runtime session, or null) and ``turn`` (1 for a session's first answer)
- ``text``: ``text``, a delta of the model's answer as it streams
- ``sentence``: ``index``, ``text`` (as written), ``speech`` (as sent to TTS); sent when a chunk
  goes to synthesis. ``speech`` is empty when the chunk has nothing to say (it then has no audio).
- ``audio``: ``index`` of its sentence, ``audio`` (Base64 bytes of the answer's audio stream),
  ``sample_rate``. The ``audio`` fields of one answer, concatenated, are ONE stream in the start
  event's format (for ``pcm16``, mono signed 16-bit little-endian samples); encoded formats carry
  their header in the first audio event and their last frames in an audio event after the last
  sentence's, so ``index`` tells which sentence's PCM the bytes came from, as near as the encoder's
  framing allows.
- ``end``: ``metrics`` (times in ms from the request: ``time_to_first_text_ms``,
  ``time_to_first_audio_ms``, ``first_sentence_ms``, ``model_ms``, ``total_ms``; and
  ``sentences``, ``audio_bytes`` (sent to the caller, in its format), ``audio_seconds`` (of
  speech); ``truncated`` when the model stopped at its
  token limit, in which case what it wrote is still spoken; ``cancelled`` when the caller cancelled
  the answer (barge-in), with ``stop_ms``, the milliseconds from the cancel until the model stream
  and the TTS session had stopped; null otherwise; ``first_chunk_ready_ms`` (when the chunk whose
  audio came first was ready as text), ``first_chunk_inference_ms`` (the TTS model's inference for
  it, measured in the TTS server) and ``pipeline_overhead_ms``, first audio minus both: the
  pipeline's own cost, null when not measured)
- ``error``: ``code``, ``message``
"""

from __future__ import annotations

import base64
import json
from typing import Any

START = "start"
TEXT = "text"
SENTENCE = "sentence"
AUDIO = "audio"
END = "end"
ERROR = "error"
TERMINAL = (END, ERROR)

# Error codes.
INVALID_REQUEST = "invalid_request"
TTS_FAILED = "tts_failed"
MODEL_FAILED = "model_failed"


def start(mode: str, sample_rate: int, fmt: str, session_id: str | None, turn: int) -> dict[str, Any]:
    return {"type": START, "mode": mode, "sample_rate": sample_rate, "format": fmt, "session_id": session_id,
            "turn": turn}


def text(delta: str) -> dict[str, Any]:
    return {"type": TEXT, "text": delta}


def sentence(index: int, written: str, speech: str) -> dict[str, Any]:
    return {"type": SENTENCE, "index": index, "text": written, "speech": speech}


def audio(index: int, data: bytes, sample_rate: int) -> dict[str, Any]:
    """An audio event as the pipeline yields it: ``audio`` holds the raw bytes. Each leg encodes
    it its own way: :func:`to_json` (Base64, for SSE) or :func:`split_audio` (a binary frame)."""
    return {"type": AUDIO, "index": index, "audio": data, "sample_rate": sample_rate}


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


def end(metrics: dict[str, Any]) -> dict[str, Any]:
    return {"type": END, "metrics": metrics}


def error(code: str, message: str) -> dict[str, Any]:
    return {"type": ERROR, "code": code, "message": message}
