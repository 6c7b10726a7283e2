"""The ``pcm16`` audio format of the TTS session: signed 16-bit little-endian mono samples."""

from __future__ import annotations

import io
import math
import sys
import wave
from array import array

from tts_protocol.messages import SAMPLE_RATE

SAMPLE_WIDTH = 2
"""Bytes per sample of the ``pcm16`` format (signed 16-bit little-endian, mono)."""


def pcm16_seconds(num_bytes: int, sample_rate: int = SAMPLE_RATE) -> float:
    return num_bytes / (SAMPLE_WIDTH * sample_rate)


def pcm16_to_wav(pcm: bytes, sample_rate: int = SAMPLE_RATE) -> bytes:
    """Wrap mono PCM16 little-endian samples in a WAV container."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(SAMPLE_WIDTH)
        wav.setframerate(sample_rate)
        wav.writeframes(pcm)
    return buffer.getvalue()


SPEECH_DBFS = -45.0
"""Where speech starts: the first 10 ms of audio whose RMS reaches this many dB below full scale
(Kokoro-FastAPI's silence threshold). Kokoro's silences are below -70 dBFS, its onsets above -40."""


def speech_onset(pcm: bytes, sample_rate: int = SAMPLE_RATE) -> int | None:
    """The sample at which speech starts in ``pcm16`` audio (the start of its first 10 ms block at
    ``SPEECH_DBFS`` or louder), or None when no block is that loud."""
    block = sample_rate // 100
    samples = array("h", pcm[:len(pcm) // SAMPLE_WIDTH * SAMPLE_WIDTH])
    if sys.byteorder == "big":
        samples.byteswap()
    threshold = (32768 * 10 ** (SPEECH_DBFS / 20)) ** 2 * block
    for start in range(0, len(samples) - block + 1, block):
        if math.fsum(sample * sample for sample in samples[start:start + block]) >= threshold:
            return start
    return None
