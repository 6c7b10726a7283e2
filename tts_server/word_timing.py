"""Which word of the text each phoneme belongs to, and when each word is spoken. Pure, no I/O.

The engine phonemizes the whole text at once (espeak's context gives the better pronunciation) and
then each word alone. The two phoneme strings differ only where context changes them: espeak joins
short words ("of the" -> ``ʌvðə``), moves stress, reads a number as several words. Aligning them
character by character (:func:`word_owners`) tells, for every symbol the model will speak, the word
it came from; every symbol is owned by some word, so no word's time is lost at a join.

Kokoro predicts a duration in frames for each token (``[0, *phonemes, 0]``: the two padding tokens
are the silence before and after). :func:`word_times` turns a piece's durations into each word's
start and end: a word starts with its first spoken symbol and ends with its last one, so the pause
of a comma or a full stop lies between words, not inside them.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from tts_protocol import Word

PAUSES = frozenset(';:,.!?¡¿—…"«»“”()[] ')
"""Symbols that are silence or a pause, not the sound of a word."""


@dataclass(frozen=True)
class WordSpan:
    """A word of the text and the symbols it owns in one piece's phonemes: ``first`` to ``last``
    (indices into the piece's phoneme string, both spoken symbols)."""

    text: str
    first: int
    last: int


@dataclass(frozen=True)
class Piece:
    """What one model call speaks: its phonemes, and the words they say (in order; empty when the
    words are not known)."""

    phonemes: str
    words: tuple[WordSpan, ...] = ()


def word_owners(word_phonemes: Sequence[str], phonemes: str) -> list[int]:
    """For each non-space symbol of ``phonemes`` (the whole text's), in order, the index of the word
    it belongs to, given each word's own phonemes.

    When the whole text has one phoneme word per word, they pair up in order. Otherwise the symbols
    are aligned, and a run of symbols that matched nothing goes to the words between its neighbours
    that matched nothing ("a" alone is the letter's name, ``ˈA``; in "of a well" it is the ``ə`` of
    ``ʌvə``), or else to the word before it."""
    groups = phonemes.split()
    if len(groups) == len(word_phonemes):
        return [index for index, group in enumerate(groups) for _ in group]
    reference: list[int] = []
    for index, word in enumerate(word_phonemes):
        reference += [index] * len(word.replace(" ", ""))
    spoken = phonemes.replace(" ", "")
    owners: list[int | None] = [None] * len(spoken)
    matcher = difflib.SequenceMatcher(None, "".join(word_phonemes).replace(" ", ""), spoken, autojunk=False)
    for block in matcher.get_matching_blocks():
        owners[block.b:block.b + block.size] = reference[block.a:block.a + block.size]
    return _fill_unmatched(owners, len(word_phonemes))


def _fill_unmatched(owners: list[int | None], words: int) -> list[int]:
    filled: list[int] = []
    index, previous = 0, -1
    while index < len(owners):
        if owners[index] is not None:
            previous = owners[index]
            filled.append(previous)
            index += 1
            continue
        run_end = index
        while run_end < len(owners) and owners[run_end] is None:
            run_end += 1
        following = owners[run_end] if run_end < len(owners) else words
        silent = list(range(previous + 1, following))  # words between the neighbours that matched nothing
        length = run_end - index
        for offset in range(length):
            filled.append(silent[offset * len(silent) // length] if silent else max(previous, 0))
        index = run_end
    return filled


def spans(words: Sequence[str], owners: Sequence[int], start: int, phonemes: str) -> tuple[WordSpan, ...]:
    """The words a piece says: ``phonemes`` is the piece, ``start`` where its first non-space symbol
    is among the whole text's (whose owners :func:`word_owners` gave)."""
    found: dict[int, list[int]] = {}
    cursor = start
    for index, symbol in enumerate(phonemes):
        if symbol == " ":
            continue
        owner = owners[cursor] if cursor < len(owners) else None
        cursor += 1
        if owner is not None and owner < len(words) and symbol not in PAUSES:
            found.setdefault(owner, []).append(index)
    return tuple(WordSpan(words[owner], indices[0], indices[-1]) for owner, indices in sorted(found.items()))


def word_times(piece: Piece, durations: Sequence[float], *, offset_samples: int, samples_per_frame: int,
               sample_rate: int) -> list[Word]:
    """Each word of ``piece`` with its start and end in milliseconds from ``offset_samples`` (the
    audio of the request before this piece). ``durations`` are the model's frames per token,
    padding included (``len(piece.phonemes) + 2`` of them)."""
    starts = [0.0]
    for frames in durations:
        starts.append(starts[-1] + float(frames))

    def ms(frame: float) -> float:
        return round((offset_samples + frame * samples_per_frame) * 1000 / sample_rate, 1)

    # Token i + 1 is symbol i: it starts where the frames of the tokens before it end.
    return [Word(span.text, ms(starts[span.first + 1]), ms(starts[span.last + 2])) for span in piece.words]
