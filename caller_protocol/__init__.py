"""The caller protocol (leg 1 of the design), with no I/O: what a caller may ask, the events of an
answer and how each leg frames them, and the caller's side of an answer as a state machine.

- ``requests``: the answer request and its validation, the ``/ws`` ``ask``/``cancel`` messages,
  the routes and the session header;
- ``events``: event types, error codes, constructors, SSE and ``/ws`` framing (every field is
  specified in ``events.schema.json``);
- ``reader``: SSE reassembly and :class:`AnswerReader`, which checks an answer as it arrives.

The agent (``agent.legs``), the caller client (``voice_agent.caller``), the benchmarks' fuzzers and
the tests all use these; the browser page's literals are checked against them by a test.
"""

from caller_protocol import events
from caller_protocol.reader import MAX_LINE_BYTES, AnswerProtocolError, AnswerReader, SSEDecoder
from caller_protocol.requests import (
    ASK,
    CANCEL,
    DEFAULT_FORMAT,
    DEFAULT_MODE,
    FORMATS,
    INVOCATIONS_PATH,
    MAX_PAYLOAD_BYTES,
    MAX_PROMPT_CHARS,
    MAX_SESSION_ID_CHARS,
    MAX_SPEED,
    MIN_SPEED,
    MODES,
    SESSION_HEADER,
    WS_PATH,
    Ask,
    Cancel,
    RequestError,
    UnreadableMessage,
    VoiceRequest,
    checked_session_id,
    encode_ask,
    encode_cancel,
    parse_ws_message,
)

__all__ = [
    "ASK", "CANCEL", "DEFAULT_FORMAT", "DEFAULT_MODE", "FORMATS", "INVOCATIONS_PATH", "MAX_LINE_BYTES",
    "MAX_PAYLOAD_BYTES", "MAX_PROMPT_CHARS", "MAX_SESSION_ID_CHARS", "MAX_SPEED", "MIN_SPEED", "MODES",
    "SESSION_HEADER", "WS_PATH",
    "AnswerProtocolError", "AnswerReader", "Ask", "Cancel", "RequestError", "SSEDecoder", "UnreadableMessage",
    "VoiceRequest", "checked_session_id", "encode_ask", "encode_cancel", "events", "parse_ws_message",
]
