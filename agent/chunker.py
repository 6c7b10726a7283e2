"""Incremental sentence chunker: streamed model text in, speakable chunks out. Pure, no I/O.

Guarantees (tested as properties in ``tests/test_chunker.py``):

- **Delta independence.** The output depends only on the text, never on how it was split into
  deltas: one character at a time, random splits and the whole text at once give the same chunks.
- **Nothing lost or duplicated.** The chunks, joined, are the input apart from the whitespace
  between chunks.
- **Smallest lookahead.** A chunk is emitted as soon as its end is certain:

  - after a terminator (``.`` ``!`` ``?`` ``…``, repeated or mixed, then any closing quotes or
    brackets), wait for the next non-space character. It ends the sentence when it can start one
    (an upper-case letter, a digit, an opening quote or bracket, a list or heading marker, a line
    break) and the word before the terminator is not an abbreviation. A terminator followed
    directly by a non-space character (``3.14``, ``v1.2.3``, ``10.0.0.1``, ``example.com``,
    ``notes.txt``, ``a.m.``) never ends a sentence;
  - after an abbreviation that may end a sentence (``U.S.``, ``Inc.``, ``etc.``, ``p.m.``,
    ``Jan.``), wait for the whole next word: the sentence ends only if that word is a common
    sentence opener ("He lives in the U.S. It is large." splits; "the U.S. Army" does not);
  - titles and Latin abbreviations (``Dr.``, ``e.g.``, ``vs.``) and single initials (``J.``) never
    end a sentence; in a chunk that starts as a numbered list, a small number (``2.``) ends one
    only before an opening word, as it is likely the next item;
  - a terminator inside an unclosed bracket or quote does not end the sentence;
  - a CJK terminator (``。！？``) outside brackets and a line break end a chunk at once (after
    any closing quotes).

- :meth:`SentenceChunker.flush` returns the unpunctuated tail.

Latency controls, each a constructor parameter:

- ``min_chars``: a chunk shorter than this is merged with the one after it, so "Yes." does not
  cost a prosody reset of its own;
- ``quick_first_chunk`` / ``first_chunk_min_words``: the first chunk of an answer may end at a
  clause mark (``,`` ``;`` ``:`` or a dash, followed by a space) once it has that many words, so
  speech can start before the first sentence is finished;
- ``max_chars``: a sentence still running at this length is cut at its last clause mark (else its
  last space) before the limit; Kokoro takes at most 510 phonemes per call and synthesis time grows
  with length.
"""

from __future__ import annotations

import re

TERMINATORS = ".!?…"
CJK_TERMINATORS = "。！？"
CLOSERS = "\"'”’»)]}」』*_`"
SENTENCE_OPENERS = "\"“‘«([{*#-—–•>「『"
OPENING_BRACKETS = "([{「『"
CLOSING_BRACKETS = ")]}」』"
CLAUSE_MARKS = ",;:—–"
_LIST_START = re.compile(r"\s*\d{1,2}\.\s")

# Abbreviations that never end a sentence. Titles and references are matched as capitalised
# ("Ms." is a title, "5 ms." is not; "No. 5" is a reference, "I said no." is not).
TITLES = frozenset({
    "Mr", "Mrs", "Ms", "Mx", "Dr", "Prof", "St", "Sr", "Jr", "Rev", "Hon", "Gen", "Sgt", "Capt", "Lt", "Col",
    "Maj", "Cmdr", "Gov", "Sen", "Rep", "Pres", "Fr", "Mt", "Ft",
    "Fig", "Figs", "No", "Nos", "Vol", "Vols", "Ch", "Sec", "Eq", "Ref", "Dept", "Est", "Ed", "Eds", "Approx",
})
LATIN = frozenset({"e.g", "i.e", "vs", "cf", "viz", "approx", "ca", "pp", "et"})

# Abbreviations that may end a sentence: they do when the next word opens one.
MAY_END = frozenset({
    "inc", "ltd", "co", "corp", "llc", "plc", "bros",
    "etc", "al",
    "a.m", "p.m",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun",
})

# Words that commonly open a sentence, used after an abbreviation that may end one.
OPENING_WORDS = frozenset("""
a an the this that these those it its he she we they i you his her their our my your there here
what when where why how who which if as but and so then yet also however meanwhile today tomorrow
yesterday now in on at for from after before while since although though because many most some
all each every no not one two three please let let's it's that's there's we're they're i'm you're
""".split())


class SentenceChunker:
    """Split a stream of text deltas into speakable chunks as soon as each one is certainly complete."""

    def __init__(self, *, min_chars: int = 8, quick_first_chunk: bool = True, first_chunk_min_words: int = 5,
                 max_chars: int = 280) -> None:
        if max_chars < 20:
            raise ValueError("max_chars must be at least 20")
        self.min_chars = min_chars
        self.quick_first_chunk = quick_first_chunk
        self.first_chunk_min_words = first_chunk_min_words
        self.max_chars = max_chars
        self._buffer = ""
        self._held = ""
        self._emitted = False

    def feed(self, delta: str) -> list[str]:
        """Add a delta; return the chunks it completed, in order."""
        # Leading whitespace never belongs to a chunk; dropping it as it arrives keeps the buffer
        # the same whatever the delta boundaries (the maximum length counts from its first character).
        self._buffer = (self._buffer + delta).lstrip()
        chunks: list[str] = []
        while (end := self._next_split()) is not None:
            chunk = self._buffer[:end].strip()
            self._buffer = self._buffer[end:].lstrip()
            self._emit(chunk, chunks)
        return chunks

    def flush(self) -> list[str]:
        """End of stream: return whatever is left (the unpunctuated tail), and reset."""
        tail = " ".join(part for part in (self._held, self._buffer.strip()) if part)
        self._buffer = ""
        self._held = ""
        self._emitted = False
        return [tail] if tail else []

    def _emit(self, chunk: str, out: list[str]) -> None:
        if not chunk:
            return
        chunk = f"{self._held} {chunk}" if self._held else chunk
        if len(chunk) < self.min_chars:
            self._held = chunk
            return
        self._held = ""
        self._emitted = True
        out.append(chunk)

    def _next_split(self) -> int | None:
        """Where the first chunk of the buffer certainly ends, or None when that is not known yet.

        Only ``text[:max_chars]`` and the lookahead its decisions need are ever examined, which is
        what makes the result independent of delta boundaries.
        """
        text = self._buffer
        quick = self.quick_first_chunk and not self._emitted and not self._held
        depth = 0
        quoted = False
        index = 0
        limit = min(len(text), self.max_chars)
        while index < limit:
            char = text[index]
            if char == "\n":
                if text[:index].strip():
                    return index + 1
            elif char in OPENING_BRACKETS:
                depth += 1
            elif char in CLOSING_BRACKETS:
                depth = max(0, depth - 1)
            elif char == '"':
                quoted = not quoted
            elif char == "“":
                quoted = True
            elif char == "”":
                quoted = False
            elif char in CJK_TERMINATORS:
                end = _skip(text, index + 1, CJK_TERMINATORS + CLOSERS)
                if depth == 0 and not quoted:  # 「はい。」と言った。 is one sentence
                    return end if end < len(text) else None
                depth, quoted = _close(text[index + 1:end], depth, quoted)
                index = end
                continue
            elif char in TERMINATORS:
                end = _skip(text, index + 1, TERMINATORS + CLOSERS)
                depth, quoted = _close(text[index + 1:end], depth, quoted)
                decision = self._decide(text, index, end, balanced=depth == 0 and not quoted)
                if decision is None or decision:
                    return end if decision else None
                index = end
                continue
            elif quick and char in CLAUSE_MARKS and depth == 0 and not quoted:
                if index + 1 >= len(text):
                    return None
                if text[index + 1].isspace() and len(text[:index].split()) >= self.first_chunk_min_words:
                    return index + 1
            index += 1
        if len(text) > self.max_chars:
            return _clause_cut(text, self.max_chars)
        return None

    @staticmethod
    def _decide(text: str, period: int, end: int, *, balanced: bool) -> bool | None:
        """Does the terminator at ``period`` (its run ending at ``end``) end a sentence? None: not known yet."""
        following = _skip(text, end, " \t")
        if following == len(text):
            return None
        if following == end and text[following] != "\n":
            return False  # "3.14", "example.com", "a.m." continuing
        if not balanced:
            return False
        if not _can_open(text[following]):
            return False
        kind = _abbreviation(text, period)
        if kind == "never":
            return False
        if kind == "maybe":
            word_end = following
            while word_end < len(text) and (text[word_end].isalpha() or text[word_end] in "'’"):
                word_end += 1
            if word_end == len(text):
                return None  # the next word is not complete yet
            return text[following:word_end].lower().replace("’", "'") in OPENING_WORDS
        return True


def _skip(text: str, index: int, characters: str) -> int:
    while index < len(text) and text[index] in characters:
        index += 1
    return index


def _close(closers: str, depth: int, quoted: bool) -> tuple[int, bool]:
    """Bracket depth and quote state after the closing characters that follow a terminator."""
    for char in closers:
        if char in CLOSING_BRACKETS:
            depth = max(0, depth - 1)
        elif char in "\"”":
            quoted = False
    return depth, quoted


def _can_open(char: str) -> bool:
    return char.isupper() or char.isdigit() or char in SENTENCE_OPENERS or char == "\n" or _is_cjk(char)


def _is_cjk(char: str) -> bool:
    return "\u3040" <= char <= "\u30ff" or "\u4e00" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af"


def _abbreviation(text: str, period: int) -> str | None:
    """"never", "maybe" or None for the word that ends at the period ``text[period]``."""
    if text[period] != ".":
        return None
    start = period
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:period].lstrip("\"'([{“‘«*_")
    if not word:
        return None
    lowered = word.lower()
    if word in TITLES or lowered in LATIN:
        return "never"
    if len(word) == 1 and word.isalpha() and word.isupper():
        return "never"  # an initial: "J. R. R. Tolkien"
    if word.isdigit() and not text[:start].strip():
        return "never"  # a list marker: "1." at the start of a chunk
    if lowered in MAY_END or _is_initialism(word):
        return "maybe"
    if word.isdigit() and len(word) <= 2 and _LIST_START.match(text):
        return "maybe"  # in a chunk that starts as a list, "2." is the next item: "1. Red 2. Blue"
    return None


def _is_initialism(word: str) -> bool:
    """"U.S", "U.K", "Ph.D": letters separated by periods (the final period is not in ``word``)."""
    parts = word.split(".")
    return len(parts) >= 2 and all(part.isalpha() and len(part) <= 2 for part in parts)


def _clause_cut(text: str, limit: int) -> int:
    """Where to cut a sentence that runs past ``limit``: after its last clause mark before the
    limit, else at its last space, else at the limit."""
    window = text[:limit]
    for marks in (";:—–", ","):
        best = max((i for i, char in enumerate(window) if char in marks and i + 1 < len(text)
                    and text[i + 1].isspace()), default=-1)
        if best > limit // 3:
            return best + 1
    space = window.rfind(" ")
    return space if space > 0 else limit
