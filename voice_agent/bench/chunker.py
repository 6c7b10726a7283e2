"""Sentence splitting, side by side: this project's chunker and peers' rules, on each corpus apart.

For each corpus source (``chunker_corpus.SOURCES``: the project's own, and others' published test
suites) and each splitter: how many cases it splits exactly as expected, and how many cases have a
**wrong split** (a boundary where the source has none: a prosody reset in the middle of a phrase)
or a **missed split** (no boundary where the source has one: first audio waits for the next one).
Then, for this chunker: its throughput, its lookahead (how many characters past a chunk's end it
must see before it emits the chunk, fed one character at a time), and the time to its first chunk
on the packaged model recordings with the default latency controls. Peers:

- ``naive-regex``: ``re.split(r"(?<=[.!?])\\s+", text)``, the rule the AWS streaming-TTS sample uses;
- ``pysbd``: rule-based sentence boundary disambiguation (whole texts only);
- ``stream2sentence``: the streaming splitter of RealtimeTTS, fed one character at a time.
"""

from __future__ import annotations

import json
import platform
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.chunker import SentenceChunker
from agent.recordings import RECORDINGS, packaged_recordings
from voice_agent.bench import plots, write_results
from voice_agent.bench.chunker_corpus import CASES, SOURCES, Case, load

Splitter = Callable[[str], list[str]]
UNLIMITED = 1_000_000  # longer than any corpus text: no sentence is cut for length


def boundaries_only() -> SentenceChunker:
    """The chunker with its latency controls off (no merging of short chunks, no quick first chunk,
    no cut of a long sentence): sentence boundaries alone, as the corpora state them."""
    return SentenceChunker(min_chars=0, quick_first_chunk=False, max_chars=UNLIMITED)


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


def _boundaries(chunks: list[str]) -> set[int]:
    """Where, in the chunks joined by single spaces, each chunk but the last ends."""
    ends, position = set(), 0
    for chunk in chunks[:-1]:
        position += len(chunk) + 1
        ends.add(position)
    return ends


def judge(case: Case, got: list[str]) -> tuple[bool, bool, bool]:
    """(as expected, has a wrong split, has a missed split) for a splitter's output on a case."""
    got = _normalise(got)
    if case.chunks is None or " ".join(got) != " ".join(_normalise(case.chunks)):
        # Only the count is known (or the splitter changed the text): judge by the count.
        return len(got) == case.count, len(got) > case.count, len(got) < case.count
    expected, found = _boundaries(_normalise(case.chunks)), _boundaries(got)
    return expected == found, bool(found - expected), bool(expected - found)


def score(cases: list[Case], split: Splitter) -> dict[str, Any]:
    verdicts = [judge(case, split(case.text)) for case in cases]
    correct = sum(right for right, _, _ in verdicts)
    return {"correct": correct, "agreement": round(correct / len(cases), 4),
            "wrong_split_cases": sum(wrong for _, wrong, _ in verdicts),
            "missed_split_cases": sum(missed for _, _, missed in verdicts)}


def lookahead(cases: list[Case]) -> list[int]:
    """For every chunk the chunker emits, fed one character at a time: how many characters past the
    chunk's last one it had to see before emitting it."""
    found: list[int] = []
    for case in cases:
        chunker, cursor = boundaries_only(), 0
        for index, char in enumerate(case.text):
            for chunk in chunker.feed(char):
                end = case.text.index(chunk, cursor) + len(chunk)
                found.append(index + 1 - end)
                cursor = end
    return found


def _deltas(name: str) -> list[tuple[float, str]]:
    lines = (RECORDINGS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines if line.strip()][1:]
    return [(event["t"], event["event"]["contentBlockDelta"]["delta"]["text"]) for event in events
            if "contentBlockDelta" in event["event"]]


def first_chunks() -> dict[str, Any]:
    """Per packaged recording, with the default latency controls: when the first chunk is complete
    (seconds after the first text delta) and what it is; and the stream's rate in characters per second."""
    found: dict[str, Any] = {}
    for name in packaged_recordings():
        deltas, chunker = _deltas(name), SentenceChunker()
        first = next(((t, chunks[0]) for t, text in deltas if (chunks := chunker.feed(text))), None)
        span = deltas[-1][0] - deltas[0][0]
        found[name] = {"chars_per_second": round(sum(len(text) for _, text in deltas) / span) if span else None,
                       "first_chunk_s": round(first[0] - deltas[0][0], 3) if first else None,
                       "first_chunk": first[1] if first else (chunker.flush() or [""])[0]}
    return found


def _throughput(split: Splitter, cases: list[Case], trials: int) -> int:
    characters = sum(len(case.text) for case in cases)
    fastest = float("inf")
    for _ in range(trials):
        started = time.perf_counter()
        for case in cases:
            split(case.text)
        fastest = min(fastest, time.perf_counter() - started)
    return round(characters / fastest)


QUICK_CASES = 100
"""With ``quick``: the cases taken from each source (its first ones)."""


def run(trials: int = 3, quick: bool = False) -> dict[str, Any]:
    corpora = {source.name: load(source.name)[:QUICK_CASES if quick else None] for source in SOURCES}
    every = [case for cases in corpora.values() for case in cases]
    chosen = splitters()
    results: dict[str, Any] = {"machine": platform.platform(), "trials": trials, "sources": {}}
    for source in SOURCES:
        results["sources"][source.name] = {
            "origin": source.origin, "developed_against": source.developed_against,
            "cases": len(corpora[source.name]),
            "splitters": {name: score(corpora[source.name], split) for name, split in chosen.items()}}
    others = [case for source in SOURCES if source.name != "own" for case in corpora[source.name]]
    results["others"] = {"cases": len(others),
                         "splitters": {name: score(others, split) for name, split in chosen.items()}}
    results["chars_per_second"] = {name: _throughput(split, CASES, trials) for name, split in chosen.items()}
    found = sorted(lookahead(every))
    recordings = first_chunks()
    rate = statistics.median(figures["chars_per_second"] for figures in recordings.values())
    results["lookahead"] = {"chunks": len(found), "p50_chars": found[len(found) // 2],
                            "p95_chars": found[int(0.95 * (len(found) - 1))], "max_chars": found[-1],
                            "stream_chars_per_second": rate,
                            "max_ms": round(1000 * found[-1] / rate)}
    results["first_chunk"] = recordings
    return results


def markdown(results: dict[str, Any]) -> str:
    names = list(results["chars_per_second"])
    lines = [f"Fastest of {results['trials']} trials; {results['machine']}. Per source: cases split as "
             "expected; **wrong**: cases with a boundary where the source has none (a prosody reset in the "
             "middle of a phrase); **missed**: cases without a boundary the source has (first audio waits "
             "for the next one).", "",
             "| splitter | " + " | ".join(
                 f"{name} ({figures['cases']}{'' if figures['developed_against'] else ', measured only'})"
                 for name, figures in results["sources"].items())
             + f" | all written by others ({results['others']['cases']}) | characters/second |",
             "|---|" + "---|" * (len(results["sources"]) + 2)]
    for name in names:
        cells = []
        for figures in [*results["sources"].values(), results["others"]]:
            mine = figures["splitters"][name]
            cells.append(f"{mine['agreement']:.1%} ({mine['wrong_split_cases']} wrong, "
                         f"{mine['missed_split_cases']} missed)")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {results['chars_per_second'][name]:,} |")
    ahead = results["lookahead"]
    lines += ["", f"Lookahead over {ahead['chunks']} chunks fed one character at a time: p50 {ahead['p50_chars']}, "
              f"p95 {ahead['p95_chars']}, max {ahead['max_chars']} characters past the chunk's end "
              f"(max {ahead['max_ms']} ms at the recordings' median {ahead['stream_chars_per_second']} characters/s).",
              "", "| recording | first chunk complete after | first chunk |", "|---|---|---|"]
    for name, figures in results["first_chunk"].items():
        lines.append(f"| {name} | {figures['first_chunk_s']} s | {figures['first_chunk']} |")
    return "\n".join(lines)


def main(out_dir: Path, trials: int = 3, quick: bool = False) -> dict[str, Any]:
    results = run(1 if quick else trials, quick)
    write_results(out_dir, "chunker", results, markdown(results), plots.chunker)
    return results
