"""The events the agent streams to its caller (leg 1), one JSON-safe dict each.

Over HTTP each event is one SSE ``data: {json}`` line. Every event has ``type`` and ``seq`` (0, 1,
2, ... within one answer). An answer ends with exactly one ``end`` (success) or ``error`` event.

- ``start``: ``mode``, ``sample_rate``, ``format`` of the audio to come; ``session_id`` (the
  AgentCore runtime session, or null) and ``turn`` (1 for a session's first answer)
- ``text``: ``text``, a delta of the model's answer as it streams
- ``sentence``: ``index``, ``text`` (as written), ``speech`` (as sent to TTS); sent when a chunk
  goes to synthesis. ``speech`` is empty when the chunk has nothing to say (it then has no audio).
- ``audio``: ``index`` of its sentence, ``audio`` (Base64 PCM16 LE mono), ``sample_rate``
- ``end``: ``metrics`` (times in ms from the request: ``time_to_first_text_ms``,
  ``time_to_first_audio_ms``, ``first_sentence_ms``, ``model_ms``, ``total_ms``; and
  ``sentences``, ``audio_bytes``, ``audio_seconds``; ``truncated`` when the model stopped at its
  token limit, in which case what it wrote is still spoken)
- ``error``: ``code``, ``message``
"""

from __future__ import annotations

import base64
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


def audio(index: int, pcm: bytes, sample_rate: int) -> dict[str, Any]:
    return {"type": AUDIO, "index": index, "audio": base64.b64encode(pcm).decode("ascii"),
            "sample_rate": sample_rate}


def decode_audio(event: dict[str, Any]) -> bytes:
    return base64.b64decode(event["audio"], validate=True)


def end(metrics: dict[str, Any]) -> dict[str, Any]:
    return {"type": END, "metrics": metrics}


def error(code: str, message: str) -> dict[str, Any]:
    return {"type": ERROR, "code": code, "message": message}
