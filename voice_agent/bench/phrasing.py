"""The simpler lever for first audio: a shorter first chunk, cut at a phrase break, and what it costs.

Each Harvard sentence (written by others) is cut before its first phrase opener (a conjunction, a
subordinator, a relative pronoun or a loose preposition: :data:`PHRASE_OPENERS`) that has at least
:data:`MIN_WORDS` words before it, as a chunker would cut an answer's first chunk when no clause mark
comes soon. The two parts are synthesized as two requests, as the agent would send them, and the
sentence once whole. Measured:

- the time to the first audio byte: the first part against the whole sentence;
- the pause at the cut: the silence between the two parts' words when played back to back (the
  first part's trailing silence plus the second's leading silence, from the model's word timings)
  against the pause the whole render leaves between the same two words;
- the speech rate: the two parts' audio against the whole's;
- intelligibility: the recogniser's word error rate on the two parts played back to back against
  the whole render.
"""

from __future__ import annotations

import time
from typing import Any

from tts_protocol import pcm16_seconds
from voice_agent.bench import harvard
from voice_agent.bench.hearing import transcribe, word_errors, words
from voice_agent.bench.tts import summarize

PHRASE_OPENERS = frozenset({
    "and", "but", "or", "nor", "so", "yet", "because", "although", "though", "while", "when", "where", "if",
    "unless", "until", "before", "after", "since", "as", "that", "which", "who", "whose", "with", "without",
    "in", "on", "at", "by", "for", "from", "into", "onto", "over", "under", "through", "across", "during",
    "beside", "between", "behind", "near", "toward", "towards", "upon", "within"})
"""Words a spoken phrase may begin with. "of" and "to" are left out: they bind to the word before."""
MIN_WORDS = 3
"""Words the first part must have."""


def cut(sentence: str) -> int | None:
    """Where to cut ``sentence``: the index of the first phrase opener after :data:`MIN_WORDS`
    words, or None when it has none (or none that leaves a second part)."""
    tokens = sentence.split()
    for index in range(MIN_WORDS, len(tokens) - 1):
        if tokens[index].lower().strip(",;:") in PHRASE_OPENERS:
            return index
    return None


def _timed(engine: Any, text: str) -> tuple[bytes, list[Any], float]:
    started = time.perf_counter()
    pcm, timed = engine.synthesize_timed(text)
    return pcm, timed, (time.perf_counter() - started) * 1000


def _trailing_ms(pcm: bytes, timed: list[Any]) -> float:
    return pcm16_seconds(len(pcm)) * 1000 - timed[-1].end_ms


def measure(engine: Any, model: Any, sentences: list[str] | None = None) -> dict[str, Any]:
    first_part, whole_first, pause_split, pause_whole, rate, report = [], [], [], [], [], []
    errors_split = errors_whole = reference_words = 0
    for sentence in harvard.SENTENCES if sentences is None else sentences:
        index = cut(sentence)
        if index is None:
            continue
        tokens = sentence.split()
        head, tail = " ".join(tokens[:index]), " ".join(tokens[index:])
        pcm_whole, timed_whole, whole_ms = _timed(engine, sentence)
        pcm_head, timed_head, head_ms = _timed(engine, head)
        pcm_tail, timed_tail, _ = _timed(engine, tail)
        if len(timed_whole) != len(tokens) or not timed_head or not timed_tail:
            continue  # a word the G2P joined or split: the pause cannot be located
        first_part.append(head_ms)
        whole_first.append(whole_ms)
        pause_split.append(_trailing_ms(pcm_head, timed_head) + timed_tail[0].start_ms)
        pause_whole.append(timed_whole[index].start_ms - timed_whole[index - 1].end_ms)
        rate.append((len(pcm_head) + len(pcm_tail)) / len(pcm_whole))
        reference = words(sentence)
        heard_split, heard_whole = transcribe(model, pcm_head + pcm_tail), transcribe(model, pcm_whole)
        errors_split += word_errors(reference, words(heard_split))
        errors_whole += word_errors(reference, words(heard_whole))
        reference_words += len(reference)
        report.append({"first_part": head, "rest": tail, "heard_split": heard_split, "heard_whole": heard_whole})
    return {"sentences_cut": len(report), "first_audio_ms": {"first_part": summarize(first_part),
                                                             "whole_sentence": summarize(whole_first)},
            "pause_at_cut_ms": {"split": summarize(pause_split), "whole": summarize(pause_whole)},
            "audio_split_over_whole": summarize(rate),
            "wer": {"split": round(errors_split / reference_words, 4),
                    "whole": round(errors_whole / reference_words, 4), "reference_words": reference_words},
            "cases": report}


def markdown(results: dict[str, Any]) -> str:
    first, pause, wer = results["first_audio_ms"], results["pause_at_cut_ms"], results["wer"]
    return "\n".join([
        f"A shorter first chunk: {results['sentences_cut']} Harvard sentences cut before their first phrase "
        f"opener after {MIN_WORDS}+ words, the parts synthesized apart, against the sentence whole.", "",
        "| | first part, then the rest | whole sentence |", "|---|---|---|",
        f"| first audio byte, p50 / p95 | {first['first_part']['p50']:,.0f} / {first['first_part']['p95']:,.0f} ms | "
        f"{first['whole_sentence']['p50']:,.0f} / {first['whole_sentence']['p95']:,.0f} ms |",
        f"| pause at the cut, p50 / p95 | {pause['split']['p50']:,.0f} / {pause['split']['p95']:,.0f} ms | "
        f"{pause['whole']['p50']:,.0f} / {pause['whole']['p95']:,.0f} ms |",
        f"| audio length, split over whole, p50 | {results['audio_split_over_whole']['p50']} | 1 |",
        f"| word error rate ({wer['reference_words']} words) | {wer['split']:.3f} | {wer['whole']:.3f} |"])
