"""What a caller may ask (leg 1), with no I/O: the answer request, its validation, and the ``/ws``
control messages.

An answer request is the ``POST /invocations`` JSON payload, or the fields of a ``/ws`` ``ask``
message: ``{"prompt", "mode"?, "voice"?, "speed"?, "format"?}``. Turns that name the same
AgentCore session (:data:`SESSION_HEADER`, which AgentCore's runtime sets itself) continue one
conversation.

``/ws`` client messages, one JSON object per text message:

- ``{"type": "ask", ...the request's fields, "played_ms"?}``: answer. An ``ask`` while an answer
  streams barges in: the current answer ends (``end`` with ``cancelled``) and the new one starts.
- ``{"type": "cancel", "played_ms"?}``: stop the current answer; nothing happens when idle.

``played_ms`` (a number, at least 0) says how much of the current answer's audio the caller had
played when it barged in, in milliseconds of the answer's audio (the timeline of its ``words``
events). The conversation then keeps exactly the words heard by then, and marks the answer as
interrupted; without it, it keeps every chunk whose audio the caller was sent.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from tts_protocol import MAX_SPEED, MIN_SPEED

INVOCATIONS_PATH = "/invocations"
WS_PATH = "/ws"
SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
"""The AgentCore runtime session of a request; a local caller sets it itself."""
MAX_SESSION_ID_CHARS = 256
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,255}")
"""What a session id may be: 1 to 256 characters (AgentCore's maximum; the service also wants at
least 33, which a local agent does not insist on) of letters, digits, ``.``, ``_``, ``:`` and ``-``,
a letter or digit first. It names a conversation in the agent's memory and in its logs."""

MODES = ("incremental", "batch")
"""``incremental``: speak each sentence as soon as it is written; ``batch``: speak the whole answer
once the model has finished (the baseline incremental speech is measured against)."""
DEFAULT_MODE = "incremental"
FORMATS = ("pcm16", "wav", "mp3", "aac", "opus")
"""The caller's audio formats (``agent.audio_encoding`` encodes each as one stream per answer)."""
DEFAULT_FORMAT = "pcm16"
MAX_PROMPT_CHARS = 4_000
"""Longest prompt accepted; a spoken question is far shorter."""
MAX_PAYLOAD_BYTES = 64 * 1024
"""Largest request body on ``/invocations``, and largest message on ``/ws``: a 4,000-character
prompt is at most about 24 KB of JSON. Bigger bodies get HTTP 413 before they are buffered; bigger
WebSocket messages close that connection with 1009."""
VOICE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""What a voice name looks like (Kokoro's are like ``af_heart``); whether the TTS server has the
voice is its answer to the first sentence: ``invalid_request``, before any audio."""

ASK = "ask"
CANCEL = "cancel"
PLAYED_MS = "played_ms"


class RequestError(ValueError):
    """A request the agent refuses; the message says what to fix."""


def checked_session_id(value: str | None) -> str | None:
    """The session header's value when it is a session id (:data:`SESSION_ID`); None for none (an
    empty header is none). Raises :class:`RequestError` otherwise, without echoing the value."""
    if not value:
        return None
    if not SESSION_ID.fullmatch(value):
        raise RequestError(f"{SESSION_HEADER}: a session id is 1 to {MAX_SESSION_ID_CHARS} letters, digits, '.', "
                           f"'_', ':' or '-', a letter or digit first (this one has {len(value)} characters)")
    return value


@dataclass(frozen=True)
class VoiceRequest:
    prompt: str
    mode: str = DEFAULT_MODE
    voice: str | None = None
    speed: float = 1.0
    format: str = DEFAULT_FORMAT

    @classmethod
    def from_payload(cls, payload: Any) -> VoiceRequest:
        """Validate an invocation payload; raises :class:`RequestError` with a clear message."""
        if not isinstance(payload, dict):
            raise RequestError("the payload must be a JSON object")
        unknown = set(payload) - {"prompt", "mode", "voice", "speed", "format"}
        if unknown:
            raise RequestError(f"unknown fields: {', '.join(sorted(unknown))}")
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise RequestError("prompt must be a non-empty string")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise RequestError(f"prompt has {len(prompt)} characters; at most {MAX_PROMPT_CHARS}")
        mode = payload.get("mode", DEFAULT_MODE)
        if mode not in MODES:
            raise RequestError(f"mode must be one of {', '.join(MODES)}")
        voice = payload.get("voice")
        if voice is not None and (not isinstance(voice, str) or not VOICE_NAME.fullmatch(voice)):
            raise RequestError("voice must be a voice name: 1 to 64 letters, digits, '_', '-' or '.'")
        speed = payload.get("speed", 1.0)
        if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not math.isfinite(speed) or not (
                MIN_SPEED <= speed <= MAX_SPEED):
            raise RequestError(f"speed must be a number from {MIN_SPEED} to {MAX_SPEED}")
        fmt = payload.get("format", DEFAULT_FORMAT)
        if fmt not in FORMATS:
            raise RequestError(f"format must be one of {', '.join(FORMATS)}")
        return cls(prompt=prompt, mode=mode, voice=voice, speed=float(speed), format=fmt)

    def to_payload(self) -> dict[str, Any]:
        """The request as its JSON payload, defaults left out."""
        payload: dict[str, Any] = {"prompt": self.prompt, "mode": self.mode}
        if self.format != DEFAULT_FORMAT:
            payload["format"] = self.format
        if self.voice is not None:
            payload["voice"] = self.voice
        if self.speed != 1.0:
            payload["speed"] = self.speed
        return payload


@dataclass(frozen=True)
class Ask:
    request: VoiceRequest
    played_ms: float | None = None
    """How much of the answer it barges in on the caller had played (None: not said)."""


@dataclass(frozen=True)
class Cancel:
    played_ms: float | None = None
    """How much of the answer the caller had played (None: not said)."""


class UnreadableMessage(RequestError):
    """A ``/ws`` message that is not an ``ask`` or a ``cancel``: answered with an error whose
    ``seq`` is null, and the connection goes on."""


def encode_ask(request: VoiceRequest, played_ms: float | None = None) -> str:
    position = {} if played_ms is None else {PLAYED_MS: played_ms}
    return json.dumps({"type": ASK, **request.to_payload(), **position}, ensure_ascii=False)


def encode_cancel(played_ms: float | None = None) -> str:
    return json.dumps({"type": CANCEL, **({} if played_ms is None else {PLAYED_MS: played_ms})})


def _played_ms(message: dict[str, Any]) -> float | None:
    value = message.get(PLAYED_MS)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise UnreadableMessage(f"{PLAYED_MS} must be a number of milliseconds, at least 0")
    return float(value)


def parse_ws_message(data: str | bytes | None) -> Ask | Cancel:
    """One ``/ws`` client message. Raises :class:`UnreadableMessage` for a message that is neither,
    and :class:`RequestError` for an ``ask`` whose request is refused."""
    try:
        message = json.loads(data) if data is not None else None
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested deeper than the parser goes
        message = None
    kind = message.get("type") if isinstance(message, dict) else None
    if kind == CANCEL:
        return Cancel(_played_ms(message))
    if kind != ASK:
        raise UnreadableMessage(f'expected a JSON object with "type" "{ASK}" or "{CANCEL}"')
    played = _played_ms(message)
    fields = {key: value for key, value in message.items() if key not in ("type", PLAYED_MS)}
    return Ask(VoiceRequest.from_payload(fields), played)
