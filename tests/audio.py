"""Checks on received audio, shared by the tests."""

from __future__ import annotations

import numpy as np

import tts_protocol


def samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768.0


def rms(pcm: bytes) -> float:
    values = samples(pcm)
    return float(np.sqrt(np.mean(values ** 2))) if values.size else 0.0


def assert_speech_like(pcm: bytes, text: str) -> None:
    """Not silent, whole samples, and as long as speaking ``text`` plausibly takes: Kokoro speaks
    English at roughly 12-18 characters per second; the bounds leave a factor of two either way."""
    assert len(pcm) % tts_protocol.SAMPLE_WIDTH == 0, "PCM16 audio must be whole 16-bit samples"
    assert rms(pcm) > 0.01, f"audio is silent (rms {rms(pcm):.4f})"
    seconds = tts_protocol.pcm16_seconds(len(pcm))
    characters = len(text)
    assert characters / 36 <= seconds <= characters / 6 + 0.5, (
        f"{seconds:.2f} s of audio is implausible for {characters} characters: {text!r}")
