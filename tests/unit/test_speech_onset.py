"""Where speech starts in an answer's audio, and when a listener who plays from the first audio
hears it: the caller's ``time_to_first_speech_ms``."""

from __future__ import annotations

import numpy as np

import tts_protocol
from voice_agent.caller import Answer

RATE = tts_protocol.SAMPLE_RATE


def pcm(*parts: tuple[float, float]) -> bytes:
    """``(seconds, dBFS)`` stretches of a 200 Hz tone (``None`` dBFS: digital silence)."""
    audio = []
    for seconds, dbfs in parts:
        t = np.arange(int(seconds * RATE)) / RATE
        level = 0.0 if dbfs is None else 10 ** (dbfs / 20) * np.sqrt(2)  # a sine's RMS is its peak over sqrt 2
        audio.append(level * np.sin(2 * np.pi * 200 * t))
    return (np.concatenate(audio) * 32767).astype("<i2").tobytes()


def test_speech_starts_at_the_first_10_ms_at_the_threshold_or_louder():
    assert tts_protocol.speech_onset(pcm((0.15, None), (0.5, -20))) == 3_600
    assert tts_protocol.speech_onset(pcm((0.1, -60), (0.1, -40))) == 2_400, "a noise floor below it is silence"
    assert tts_protocol.speech_onset(pcm((0.5, -60))) is None
    assert tts_protocol.speech_onset(b"") is None and tts_protocol.speech_onset(b"\x01") is None


def answer(audio: bytes, arrivals: list[tuple[float, int]]) -> Answer:
    result = Answer(mode="incremental", audio=bytearray(audio), audio_arrivals=arrivals)
    result.time_to_first_audio_ms = arrivals[0][0]
    return result


def test_first_speech_is_heard_its_offset_after_the_first_audio_or_when_it_arrives_if_later():
    audio = pcm((0.2, None), (0.8, -20))  # speech from sample 4,800 (byte 9,600)
    assert answer(audio, [(500.0, 4_800), (510.0, len(audio) - 4_800)]).time_to_first_speech_ms == 700.0
    late = answer(audio, [(500.0, 9_600), (900.0, len(audio) - 9_600)])
    assert late.time_to_first_speech_ms == 900.0, "the listener ran out of audio before the speech arrived"
    assert answer(pcm((1.0, None)), [(500.0, 48_000)]).time_to_first_speech_ms is None
    other = answer(audio, [(500.0, len(audio))])
    other.format = "mp3"
    assert other.time_to_first_speech_ms is None
