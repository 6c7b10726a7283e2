"""``voice-agent check``: prove a deployed TTS endpoint can actually synthesize.

An endpoint that reports InService with a healthy ``/ping`` can still be unable to speak: a
container whose WebSocket handler reads only text frames passes every health check and fails on
the binary frames SageMaker delivers. The check opens a real bidirectional session (through
SageMaker's ``InvokeEndpointWithBidirectionalStream``, or straight to a container's WebSocket),
synthesizes one sentence, and verifies what came back: a ``synthesis_start``, audio in whole 16-bit
samples that is not silence and lasts as long as the sentence plausibly takes, and a
``synthesis_complete`` whose byte count matches what arrived.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tts_protocol
from agent.tts_client import Connect, TTSError, TTSSession

DEFAULT_TEXT = "This is a check that the endpoint can speak."
DEFAULT_TIMEOUT = 60.0
"""Seconds to wait for the sentence's audio (a cold endpoint's first synthesis is the slowest)."""
CHARS_PER_SECOND = (6.0, 36.0)
"""Speaking rates that bound a plausible duration: Kokoro speaks English at roughly 12 to 18
characters per second; the bounds leave a factor of two either way."""
MIN_RMS = 0.01
"""Below this (full scale 1.0) the audio is silence."""


def plausible_seconds(text: str) -> tuple[float, float]:
    """The shortest and longest plausible durations of ``text`` spoken."""
    return len(text) / CHARS_PER_SECOND[1], len(text) / CHARS_PER_SECOND[0] + 0.5


@dataclass
class CheckResult:
    ok: bool
    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, passed: bool, detail: str) -> None:
        self.checks.append((name, passed, detail))
        self.ok = self.ok and passed

    def report(self) -> str:
        lines = [f"{'PASS' if passed else 'FAIL'}  {name}: {detail}" for name, passed, detail in self.checks]
        lines.append("the endpoint can synthesize" if self.ok else "the endpoint CANNOT synthesize")
        return "\n".join(lines)


def _rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm[:len(pcm) - len(pcm) % tts_protocol.SAMPLE_WIDTH], dtype="<i2")
    return float(np.sqrt(np.mean((samples / 32768.0) ** 2))) if samples.size else 0.0


async def check(target: str | Connect, text: str = DEFAULT_TEXT, voice: str | None = None,
                timeout: float = DEFAULT_TIMEOUT) -> CheckResult:
    """Synthesize ``text`` over one session to ``target`` and verify the answer."""
    result = CheckResult(ok=True)
    started = time.perf_counter()
    pcm = bytearray()
    first_audio_ms = None
    try:
        async with TTSSession(target, voice=voice, max_reconnects=0, chunk_timeout=timeout) as tts:
            stream = await tts.synthesize(text)
            async for chunk in stream:
                if first_audio_ms is None:
                    first_audio_ms = round((time.perf_counter() - started) * 1000, 1)
                pcm += chunk
            stats = dict(stream.stats)
    except TTSError as exc:
        result.add("session", False, f"{exc.code}: {exc}")
        return result
    result.stats = {**stats, "first_audio_ms": first_audio_ms, "received_bytes": len(pcm)}
    result.add("session", True, f"opened, first audio after {first_audio_ms} ms")
    result.add("audio", len(pcm) > 0, f"{len(pcm):,} bytes received")
    result.add("whole samples", len(pcm) % tts_protocol.SAMPLE_WIDTH == 0, "16-bit PCM")
    seconds = tts_protocol.pcm16_seconds(len(pcm))
    low, high = plausible_seconds(text)
    result.add("duration", low <= seconds <= high,
               f"{seconds:.2f} s for {len(text)} characters (plausible: {low:.2f}-{high:.2f} s)")
    level = _rms(bytes(pcm))
    result.add("not silence", level > MIN_RMS, f"RMS {level:.3f}")
    complete = stats.get("audio_bytes")
    result.add("synthesis_complete", complete == len(pcm), f"reports {complete} bytes, {len(pcm)} arrived")
    return result
