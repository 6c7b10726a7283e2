"""Word timings, checked against clocks that do not come from the model's durations.

For each Harvard sentence (``harvard.SENTENCES``, written for listening tests by others) the engine
synthesizes it in process and says when each word is spoken. Two independent clocks judge that:

- an offline speech recogniser (Whisper tiny.en through faster-whisper, ``word_timestamps=True``)
  on the same audio: for every word both agree on, the absolute difference of their starts (and
  ends). Whisper dates an utterance's first word from the start of its audio segment, not from the
  sound (here it says 0 ms where the voice starts ~300 ms in), so first words are reported apart;
- the sound itself: the first word's start against the speech onset, the first 10 ms window whose
  RMS reaches a tenth of the utterance's loudest.

Goal (the word-timing issue): word starts within 60 ms median and 150 ms p95 of the recogniser's.
"""

from __future__ import annotations

import difflib
import platform
import re
from pathlib import Path
from typing import Any

import numpy as np

from tts_protocol import SAMPLE_RATE, Word
from voice_agent.bench import write_results
from voice_agent.bench.harvard import SENTENCES
from voice_agent.bench.hearing import heard_words, recogniser
from voice_agent.bench.tts import summarize

QUICK_SENTENCES = 3
"""With ``quick``: the sentences measured (the first ones)."""
ONSET_WINDOW = 240
"""Samples per RMS window for the speech onset: 10 ms at 24 kHz."""


def speech_onset_ms(pcm: bytes) -> float:
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    usable = audio[:len(audio) - len(audio) % ONSET_WINDOW].reshape(-1, ONSET_WINDOW)
    envelope = np.sqrt(np.mean(usable ** 2, axis=1))
    return float(np.argmax(envelope >= 0.1 * envelope.max())) * ONSET_WINDOW * 1000 / SAMPLE_RATE


def _normal(word: str) -> str:
    return re.sub(r"[^a-z0-9']", "", word.lower())


def matched(ours: list[Word], theirs: list[Word]) -> list[tuple[int, Word, Word]]:
    """The words both lists have, paired in order: (our index, ours, theirs)."""
    matcher = difflib.SequenceMatcher(None, [_normal(w.word) for w in ours], [_normal(w.word) for w in theirs],
                                      autojunk=False)
    return [(block.a + k, ours[block.a + k], theirs[block.b + k]) for block in matcher.get_matching_blocks()
            for k in range(block.size)]


def measure(engine: Any, model: Any, sentences: list[str]) -> dict[str, Any]:
    starts, ends, first_starts, onsets, timed, words_total = [], [], [], [], 0, 0
    for sentence in sentences:
        pcm, words = engine.synthesize_timed(sentence)
        words_total += len(sentence.split())
        timed += len(words)
        for index, ours, theirs in matched(words, heard_words(model, pcm)):
            (first_starts if index == 0 else starts).append(abs(ours.start_ms - theirs.start_ms))
            if index > 0:
                ends.append(abs(ours.end_ms - theirs.end_ms))
        if words:
            onsets.append(abs(words[0].start_ms - speech_onset_ms(pcm)))
    return {"sentences": len(sentences), "words": words_total, "words_timed": timed,
            "start_vs_recogniser_ms": summarize(starts), "end_vs_recogniser_ms": summarize(ends),
            "first_start_vs_recogniser_ms": summarize(first_starts),
            "first_start_vs_onset_ms": summarize(onsets), "machine": platform.platform()}


def markdown(results: dict[str, Any]) -> str:
    starts, ends = results["start_vs_recogniser_ms"], results["end_vs_recogniser_ms"]
    first, onset = results["first_start_vs_recogniser_ms"], results["first_start_vs_onset_ms"]
    return "\n".join([
        f"{results['sentences']} Harvard sentences, {results['words']} words, {results['words_timed']} timed; "
        f"{results['machine']}.", "",
        "| word times against | words | median abs. difference | p95 | max |", "|---|---|---|---|---|",
        f"| the recogniser, starts (all but each sentence's first word) | {starts['trials']} | {starts['p50']} ms | "
        f"{starts['p95']} ms | {starts['max']} ms |",
        f"| the recogniser, ends (the same words) | {ends['trials']} | {ends['p50']} ms | {ends['p95']} ms | "
        f"{ends['max']} ms |",
        f"| the recogniser, first words' starts (it dates them from the segment start) | {first['trials']} | "
        f"{first['p50']} ms | {first['p95']} ms | {first['max']} ms |",
        f"| the speech onset, first words' starts | {onset['trials']} | {onset['p50']} ms | {onset['p95']} ms | "
        f"{onset['max']} ms |"])


def main(out_dir: Path, trials: int = 1, quick: bool = False) -> dict[str, Any]:
    """``trials`` is unused: the model and the recogniser are deterministic."""
    from tts_server.engine import KokoroEngine

    sentences = SENTENCES[:QUICK_SENTENCES] if quick else SENTENCES
    results = measure(KokoroEngine.load(threads=2), recogniser(), sentences)
    write_results(out_dir, "timings", results, markdown(results))
    return results
