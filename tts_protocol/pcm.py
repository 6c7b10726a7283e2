"""The ``pcm16`` audio format of the TTS session: signed 16-bit little-endian mono samples."""

from __future__ import annotations

import io
import wave

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
