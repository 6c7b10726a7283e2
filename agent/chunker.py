"""Incremental sentence chunker: streamed model text in, speakable sentences out. Pure, no I/O.

Guarantees:

- The output depends only on the text, never on how it was split into deltas: feeding it one
  character at a time or all at once gives the same sentences.
- Nothing is lost or duplicated: the sentences, joined, are the input without the whitespace
  between them.
- Lookahead rule: after a terminator (``.``, ``!``, ``?``, possibly repeated, then any closing
  quotes or brackets) the chunker waits for the next non-space character. A sentence ends there
  when that character starts a new sentence (an upper-case letter, a digit, an opening quote or
  bracket, a list marker) and the word before the terminator is not an abbreviation that never ends
  a sentence (``Dr.``, ``e.g.``) or a single initial (``J.``). A terminator followed directly by a
  non-space character (``3.14``, ``example.com``) never ends a sentence. A CJK terminator
  (``。！？``) and a line break end a sentence at once.
- :meth:`SentenceChunker.flush` returns the unpunctuated tail at end of stream.
"""

from __future__ import annotations

TERMINATORS = ".!?"
CJK_TERMINATORS = "。！？"
CLOSERS = "\"')]}”’»"
OPENERS = "\"'([{“‘«*#-"

# Words that, followed by a period, never end a sentence.
NON_TERMINAL_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "mx", "dr", "prof", "st", "sr", "jr", "rev", "gen", "sgt", "capt", "lt", "col",
    "e.g", "i.e", "vs", "cf", "approx", "fig", "no", "nos", "vol", "pp", "est", "dept", "mt",
})


class SentenceChunker:
    """Split a stream of text deltas into sentences as soon as each one is certainly complete."""

    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, delta: str) -> list[str]:
        """Add a delta; return the sentences it completed, in order."""
        self._buffer += delta
        sentences: list[str] = []
        while (end := self._next_boundary()) is not None:
            sentence = self._buffer[:end].strip()
            self._buffer = self._buffer[end:].lstrip()
            if sentence:
                sentences.append(sentence)
        return sentences

    def flush(self) -> list[str]:
        """End of stream: return whatever is left (the unpunctuated tail), and reset."""
        tail = self._buffer.strip()
        self._buffer = ""
        return [tail] if tail else []

    def _next_boundary(self) -> int | None:
        """Index just past the first certain sentence end in the buffer, or None."""
        text = self._buffer
        index = 0
        while index < len(text):
            char = text[index]
            if char == "\n":
                if text[:index].strip():
                    return index + 1
            elif char in CJK_TERMINATORS:
                end = _skip(text, index + 1, CJK_TERMINATORS + CLOSERS)
                if end == len(text):
                    return None  # a closing quote may still follow
                return end
            elif char in TERMINATORS:
                end = _skip(text, index + 1, TERMINATORS + CLOSERS)
                following = _skip(text, end, " \t")
                if following == len(text):
                    return None  # need the next non-space character to decide
                if following > end and _starts_sentence(text[following]) and not _abbreviation_before(text, index):
                    return end
                index = end
                continue
            index += 1
        return None


def _skip(text: str, index: int, characters: str) -> int:
    while index < len(text) and text[index] in characters:
        index += 1
    return index


def _starts_sentence(char: str) -> bool:
    return char.isupper() or char.isdigit() or char in OPENERS or char == "\n"


def _abbreviation_before(text: str, period: int) -> bool:
    if text[period] != ".":
        return False
    start = period
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:period].lstrip("\"'([{“‘«")
    if not word:
        return False
    if word.lower() in NON_TERMINAL_ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isupper():  # an initial: "J. R. R. Tolkien"
        return True
    # A list marker ("1." at the start of the text) is not a sentence.
    return word.isdigit() and not text[:start].strip()
