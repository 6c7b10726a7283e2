"""Checks on received audio, shared by the tests."""

from __future__ import annotations

import numpy as np

import tts_protocol
from voice_agent.check import plausible_seconds


def samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768.0


def rms(pcm: bytes) -> float:
    values = samples(pcm)
    return float(np.sqrt(np.mean(values ** 2))) if values.size else 0.0


def assert_speech_like(pcm: bytes, text: str) -> None:
    """Not silent, whole samples, and as long as speaking ``text`` plausibly takes
    (``voice_agent.check.plausible_seconds``)."""
    assert len(pcm) % tts_protocol.SAMPLE_WIDTH == 0, "PCM16 audio must be whole 16-bit samples"
    assert rms(pcm) > 0.01, f"audio is silent (rms {rms(pcm):.4f})"
    seconds = tts_protocol.pcm16_seconds(len(pcm))
    low, high = plausible_seconds(text)
    assert low <= seconds <= high, f"{seconds:.2f} s of audio is implausible for {len(text)} characters: {text!r}"


def decode(stream: bytes, sample_rate: int = tts_protocol.SAMPLE_RATE) -> np.ndarray:
    """Any of the caller formats, decoded by FFmpeg (PyAV) to mono float samples at ``sample_rate``."""
    import io

    import av

    resampler = av.AudioResampler(format="s16", layout="mono", rate=sample_rate)
    parts = []
    with av.open(io.BytesIO(stream)) as container:
        for frame in container.decode(audio=0):
            for out in resampler.resample(frame):
                parts.append(out.to_ndarray().reshape(-1))
    for out in resampler.resample(None):
        parts.append(out.to_ndarray().reshape(-1))
    return np.concatenate(parts).astype(np.float64) / 32768.0 if parts else np.zeros(0)


def envelope(values: np.ndarray, window: int = 480) -> np.ndarray:
    """RMS per 20 ms window (at 24 kHz): the shape of speech, which lossy codecs keep."""
    usable = values[:len(values) - len(values) % window]
    return np.sqrt(np.mean(usable.reshape(-1, window) ** 2, axis=1))


def best_envelope_match(reference: np.ndarray, other: np.ndarray, max_lag: int = 10) -> float:
    """The highest correlation of two envelopes over lags up to ``max_lag`` windows either way
    (encoders add a few milliseconds of delay at the start)."""
    best = -1.0
    for lag in range(-max_lag, max_lag + 1):
        a, b = (reference[lag:], other) if lag >= 0 else (reference, other[-lag:])
        size = min(len(a), len(b))
        if size > 10:
            best = max(best, float(np.corrcoef(a[:size], b[:size])[0, 1]))
    return best
