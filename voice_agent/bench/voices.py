"""Which voice is heard most clearly: every voice the engine has speaks two sets of English written by
others, an offline recogniser transcribes each sentence, and the word error rate is counted per
voice and per set.

- ``plain``: the 50 Harvard sentences (``harvard.SENTENCES``, phonetically balanced, written for
  listening tests);
- ``numbers``: Kokoro-FastAPI's number, money and time cases (``number_sentences.SENTENCES``).

Each sentence goes through the agent's speech-text normaliser before it is spoken, as in an answer,
and the recogniser is Whisper tiny.en (``hearing``), so a figure measures the voice, the normaliser
and the recogniser together; the voices differ only in the voice. The voice with the lowest word
error rate over both sets is the clearest (ties: the lower error rate on ``plain``).
"""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Any

from agent.speech_text import to_speech
from voice_agent.bench import harvard, number_sentences, write_results
from voice_agent.bench.hearing import recogniser, transcribe, word_errors, words

SETS = {"plain": harvard.SENTENCES, "numbers": number_sentences.SENTENCES}
QUICK_SENTENCES = 3
"""With ``quick``: the sentences measured per set (the first ones)."""


def _rate(errors: int, reference_words: int) -> float:
    return round(errors / reference_words, 4) if reference_words else 0.0


def measure_voice(engine: Any, model: Any, voice: str, sets: dict[str, list[str]]) -> dict[str, Any]:
    """One voice over ``sets``: per set the errors, the reference words, the rate and every sentence
    heard wrongly (what was meant and what was heard)."""
    figures: dict[str, Any] = {}
    for name, sentences in sets.items():
        errors = reference_words = 0
        misheard = []
        for sentence in sentences:
            pcm = b"".join(engine.synthesize(to_speech(sentence), voice=voice))
            heard = transcribe(model, pcm)
            reference = words(sentence)
            count = word_errors(reference, words(heard))
            errors, reference_words = errors + count, reference_words + len(reference)
            if count:
                misheard.append({"text": sentence, "heard": heard, "errors": count})
        figures[name] = {"sentences": len(sentences), "reference_words": reference_words, "errors": errors,
                         "wer": _rate(errors, reference_words), "misheard": misheard}
    total_errors = sum(figure["errors"] for figure in figures.values())
    total_words = sum(figure["reference_words"] for figure in figures.values())
    return {"sets": figures, "wer": _rate(total_errors, total_words)}


def measure(engine: Any, model: Any, sets: dict[str, list[str]], voices: list[str] | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    names = voices if voices is not None else sorted(engine.voices)
    per_voice = {voice: measure_voice(engine, model, voice, sets) for voice in names}
    ranking = sorted(names, key=lambda voice: (per_voice[voice]["wer"], per_voice[voice]["sets"]["plain"]["wer"]))
    return {"voices": per_voice, "ranking": ranking, "clearest": ranking[0],
            "sentences": {name: len(sentences) for name, sentences in sets.items()},
            "seconds": round(time.perf_counter() - started, 1), "machine": platform.platform()}


def markdown(results: dict[str, Any]) -> str:
    counts = results["sentences"]
    lines = [f"Word error rate of Whisper tiny.en on each voice: {counts['plain']} Harvard sentences (plain) and "
             f"{counts['numbers']} of Kokoro-FastAPI's number cases (numbers), normalised as in an answer; "
             f"{results['seconds']} s on {results['machine']}.", "",
             "| voice | plain | numbers | both |", "|---|---|---|---|"]
    for voice in results["ranking"]:
        figures = results["voices"][voice]
        plain, numbers = figures["sets"]["plain"], figures["sets"]["numbers"]
        lines.append(f"| `{voice}`{' (clearest)' if voice == results['clearest'] else ''} | {plain['wer']:.3f} "
                     f"({plain['errors']}/{plain['reference_words']}) | {numbers['wer']:.3f} "
                     f"({numbers['errors']}/{numbers['reference_words']}) | {figures['wer']:.3f} |")
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> Path:
    from voice_agent.bench.plots import _figure, _save

    voices = results["ranking"]
    figure, axes = _figure(height=0.9 + 0.45 * len(voices))
    height = 0.4
    for offset, name in enumerate(("plain", "numbers")):
        values = [results["voices"][voice]["sets"][name]["wer"] for voice in voices]
        bars = axes.barh([index + offset * height for index in range(len(voices))], values, height=height, label=name)
        axes.bar_label(bars, labels=[f"{value:.3f}" for value in values], padding=3, fontsize=7)
    axes.set_yticks([index + height / 2 for index in range(len(voices))], voices)
    axes.invert_yaxis()
    axes.margins(x=0.2)
    axes.set_xlabel("word error rate of an offline recogniser (lower is clearer)")
    axes.legend(fontsize=7, loc="lower right")
    axes.set_title("How clearly each packaged voice is heard", fontsize=10)
    return _save(figure, path)


def main(out_dir: Path, trials: int = 1, quick: bool = False) -> dict[str, Any]:
    """``trials`` is unused: the model and the recogniser are deterministic."""
    from tts_server.engine import KokoroEngine

    sets = {name: sentences[:QUICK_SENTENCES] for name, sentences in SETS.items()} if quick else SETS
    results = measure(KokoroEngine.load(threads=2), recogniser(), sets)
    write_results(out_dir, "voices", results, markdown(results), plot)
    return results
