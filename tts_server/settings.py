"""The TTS server's settings, from the environment (SageMaker starts the container as plain
``serve``, so the environment is how a deployment configures it) or from ``serve-tts`` options."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from settings_table import above, at_least, flag, from_env, setting

DEFAULT_VOICE = "jf_gongitsune"
"""The offline default voice: of the packaged voices, the one an offline recogniser hears most clearly
(`voice-agent bench voices`: word error rate 0.085 against `jf_alpha`'s 0.138)."""

MAX_FRAME_BYTES = 1024 * 1024
"""Largest WebSocket frame the server reads (the uvicorn ``ws_max_size``). A frame above it closes
the connection with code 1009 before it is buffered; a frame between ``MAX_MESSAGE_BYTES`` and this
gets a ``message_too_large`` error and the session goes on."""


LEAD_MS = 150
"""Leading silence kept before each utterance (``tts_server.rendering.LEAD_MS`` says why)."""


def lead(text: str) -> int | None:
    """Milliseconds (at least 0), or ``model`` for the model's own leading silence (None)."""
    return None if text.strip().lower() == "model" else at_least(0)(text)


@dataclass(frozen=True)
class ServerSettings:
    voices_path: Path | None = setting(
        "VOICE_AGENT_VOICES", None, "a Kokoro voices file (`.npz`, e.g. `voices-v1.0.bin`); unset: the packaged "
        "voices", Path)
    default_voice: str = setting("VOICE_AGENT_DEFAULT_VOICE", DEFAULT_VOICE, "the voice of a request that names none")
    threads: int | None = setting("VOICE_AGENT_THREADS", None, "ONNX Runtime intra-op threads; unset: every core",
                                  at_least(1))
    max_sessions: int = setting(
        "VOICE_AGENT_MAX_SESSIONS", 16,
        "sessions served at once. Inference is serialised, so each session beyond the few a machine can keep "
        "real-time only adds waiting (4 sessions reach RTF ~1 on 2 cores); a session over the limit gets an "
        "`overloaded` error and close code 1013 instead of queueing without bound", at_least(1))
    idle_timeout: float = setting(
        "VOICE_AGENT_IDLE_TIMEOUT", 300.0,
        "seconds a session may go without a client message while nothing is pending; then it is closed (code "
        "1000, reason \"idle timeout\") so abandoned sessions do not hold resources", above(0))
    windows: bool = setting(
        "VOICE_AGENT_WINDOWS", True,
        "`1`/`0`: render a request that asks for it (`\"windows\": true`, an answer's first two requests from the "
        "agent) in windows: first audio after about 0.3 s whatever its length, for about a third more decoder time "
        "on that request; `0` renders every request whole", flag)
    lead_ms: int | None = setting(
        "VOICE_AGENT_LEAD_MS", LEAD_MS,
        "milliseconds of the model's leading silence kept before each sentence (rounded to 25 ms frames): Kokoro "
        "predicts 0.45-0.5 s before the first phoneme, which would add to the pause before every sentence and to "
        "the wait for the first speech; the frames dropped are not rendered (in windows, they are decoded as the "
        "first window's context, which is heard better, and not played); `model` keeps all of it", lead)
    static_decoder: bool = setting(
        "VOICE_AGENT_STATIC_DECODER", True,
        "`1`/`0`: run the decoder with 30 of its generator's convolutions quantized statically (input ranges fixed "
        "once on calibration text, prepared into the cache on first use: about a minute and 1.7 GB; images prepare "
        "it when they are built): 1.2-1.3x the decoder's throughput, heard within 0.01 word error rate of the "
        "model's own; `0` runs the model's decoder as it is (as a GPU and another model than the packaged int8 one "
        "do)",
        flag)
    max_queued_requests: int = 64
    """Synthesize requests one session may have waiting. A sentence-chunked answer rarely has more
    than a few dozen; beyond this the request gets a ``queue_full`` error instead of growing memory."""
    frame_samples: int = 4_800
    """Samples per binary audio frame (200 ms, 9.6 KB). Smaller frames let ``cancel`` cut audio
    sooner; larger ones cost fewer messages."""
    max_buffered_frames: int = 256
    """Frames (and messages) synthesized ahead of what the client has taken: ~51 s of audio and
    2.5 MB per session at most. When the client reads slower, synthesis for it waits."""

    @classmethod
    def from_env(cls) -> ServerSettings:
        return from_env(cls)
