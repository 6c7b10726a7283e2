"""Sentence splitting, side by side: this project's chunker and peers' rules on one corpus.

For each splitter: how many corpus cases it splits exactly as expected (per category too), and
its throughput in characters per second. Peers:

- ``naive-regex``: ``re.split(r"(?<=[.!?])\\s+", text)``, the rule the AWS streaming-TTS sample uses;
- ``pysbd``: rule-based sentence boundary disambiguation (whole texts only);
- ``stream2sentence``: the streaming splitter of RealtimeTTS, rule-based tokenizer, fed one
  character at a time.
"""

from __future__ import annotations

import platform
import re
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.chunker import SentenceChunker
from voice_agent.bench import plots, write_results
from voice_agent.bench.chunker_corpus import CASES

Splitter = Callable[[str], list[str]]


def boundaries_only() -> SentenceChunker:
    """The chunker with its latency controls off: sentence boundaries alone, as the corpus states them."""
    return SentenceChunker(min_chars=0, quick_first_chunk=False)


def ours(text: str) -> list[str]:
    chunker = boundaries_only()
    return chunker.feed(text) + chunker.flush()


def ours_streamed(text: str) -> list[str]:
    chunker = boundaries_only()
    return [chunk for char in text for chunk in chunker.feed(char)] + chunker.flush()


_NAIVE = re.compile(r"(?<=[.!?])\s+")


def naive_regex(text: str) -> list[str]:
    return [part.strip() for part in _NAIVE.split(text) if part.strip()]


def _pysbd() -> Splitter:
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False)
    return lambda text: [part.strip() for part in segmenter.segment(text) if part.strip()]


def _stream2sentence() -> Splitter:
    import stream2sentence

    def split(text: str) -> list[str]:
        return [part.strip() for part in stream2sentence.generate_sentences(
            iter(text), minimum_sentence_length=1, minimum_first_fragment_length=1,
            quick_yield_single_sentence_fragment=False, cleanup_text_links=False, cleanup_text_emojis=False)
            if part.strip()]

    return split


def splitters() -> dict[str, Splitter]:
    return {"voice-agent, whole text": ours, "voice-agent, 1-char deltas": ours_streamed,
            "naive regex (AWS sample)": naive_regex, "pysbd 0.3": _pysbd(),
            "stream2sentence 1.1, 1-char deltas": _stream2sentence()}


def _normalise(chunks: list[str]) -> list[str]:
    return [" ".join(chunk.split()) for chunk in chunks]


def _timed(split: Splitter) -> float:
    started = time.perf_counter()
    for _, text, _ in CASES:
        split(text)
    return time.perf_counter() - started


def run(trials: int = 3) -> dict[str, Any]:
    results: dict[str, Any] = {"cases": len(CASES), "machine": platform.platform(), "trials": trials,
                               "splitters": {}}
    characters = sum(len(text) for _, text, _ in CASES)
    for name, split in splitters().items():
        by_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for category, text, expected in CASES:
            by_category[category][0] += _normalise(split(text)) == _normalise(expected)
            by_category[category][1] += 1
        correct = sum(good for good, _ in by_category.values())
        fastest = min(_timed(split) for _ in range(trials))
        results["splitters"][name] = {
            "correct": correct,
            "agreement": round(correct / len(CASES), 4),
            "chars_per_second": round(characters / fastest),
            "by_category": {category: f"{good}/{total}" for category, (good, total) in sorted(by_category.items())},
        }
    return results


def markdown(results: dict[str, Any]) -> str:
    lines = [f"{results['cases']} cases; fastest of {results['trials']} trials; {results['machine']}.", "",
             "| splitter | cases split as expected | characters/second |", "|---|---|---|"]
    for name, figures in results["splitters"].items():
        lines.append(f"| {name} | {figures['correct']}/{results['cases']} ({figures['agreement']:.1%}) | "
                     f"{figures['chars_per_second']:,} |")
    return "\n".join(lines)


def main(out_dir: Path, trials: int = 3) -> dict[str, Any]:
    results = run(trials)
    write_results(out_dir, "chunker", results, markdown(results), plots.chunker)
    return results
