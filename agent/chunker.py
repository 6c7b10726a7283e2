"""Incremental sentence chunker: streamed model text in, speakable chunks out. Pure, no I/O.

Guarantees (tested as properties in ``tests/unit/test_chunker.py``):

- **Delta independence.** The output depends only on the text, never on how it was split into
  deltas: one character at a time, random splits and the whole text at once give the same chunks.
- **Nothing lost or duplicated.** The chunks, joined, are the input apart from the whitespace
  between chunks.
- **Smallest lookahead.** A chunk is emitted as soon as its end is certain. After a terminator the
  chunker waits for the next non-space character, after an abbreviation for the next whole word or
  token; measured over every corpus fed one character at a time, at most 11 characters past a
  chunk's end (``voice-agent bench chunker``):

  - after a terminator (``.`` ``!`` ``?`` ``…``, repeated or mixed, then any closing quotes or
    brackets) it ends the sentence when the next character can start one (an upper-case letter, a
    digit, an opening quote or bracket, a list or heading marker, a line break) and the word before
    the terminator is not an abbreviation. A terminator followed directly by a non-space character
    (``3.14``, ``v1.2.3``, ``10.0.0.1``, ``example.com``, ``a.m.``) never ends a sentence;
  - after an abbreviation that may end a sentence (``U.S.``, ``Inc.``, ``etc.``, ``Jan.``, ``Pa.``),
    the sentence ends only if the next word opens one ("He lives in the U.S. It is large." splits;
    "the U.S. Army" does not). Times (``p.m.``) that open their clause ("At 7 p.m. I left") never
    end one; a state after "City," ends one before any capital;
  - titles, ranks and Latin abbreviations (``Dr.``, ``Supt.``, ``e.g.``, ``vs.``) never end a
    sentence, nor does a reference before a label (``p. 55``, ``Art. IV``, ``Fig. 2a``); a single
    initial ends one only before an opening word (``J. R. R. Tolkien``; "you and I. Did you");
  - names that end in ``!`` (``Yahoo!``) do not end a sentence;
  - in a chunk that opens with a list marker (``1.`` ``2.)`` ``b.`` ``iv.``), the next marker starts
    the next chunk ("1.) Eggs 2.) Milk");
  - a terminator inside an unclosed bracket or quote does not end the sentence, except in a
    parenthetical of several sentences that opens the chunk;
  - a CJK terminator (``。！？``) outside brackets and a line break end a chunk at once (after
    any closing quotes).

  The word classes are data, in ``agent/abbreviations.py``, each with its source.

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

from agent.abbreviations import (
    CAPITALISED_MAY_END,
    CITATIONS,
    EXCLAIMED_NAMES,
    INITIAL_OPENING_WORDS,
    LATIN,
    MAY_END,
    OPENING_WORDS,
    REFERENCE_WORDS,
    REFERENCES,
    STATES,
    STREET_TITLES,
    TIMES,
    TITLES,
)

TERMINATORS = ".!?…"
CJK_TERMINATORS = "。！？"
CLOSERS = "\"'”’»)]}」』*_`"
SENTENCE_OPENERS = "\"'“‘«([{*#-—–•>「『"
OPENING_BRACKETS = "([{「『"
CLOSING_BRACKETS = ")]}」』"
CLAUSE_MARKS = ",;:—–"

_LIST_MARKER = re.compile(r"(\d{1,2}|[A-Za-z]|[ivx]{1,5}|[IVX]{1,5})(\.\)|\.|\))\s")
_LABEL = re.compile(r"[\d§#(]|[IVXLC]+\b|[ivxlc]+\b|[A-Za-z](?:\d|[^\w\s]|$)|[A-Z]{1,3}-?\d")
_TIME_PREPOSITIONS = frozenset({"at", "by", "from", "until", "till", "before", "after", "since", "around", "about"})
_ROMAN = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii", "xiii", "xiv", "xv"]


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
        what makes the result independent of delta boundaries."""
        text = self._buffer
        quick = self.quick_first_chunk and not self._emitted and not self._held
        depth = 0
        quoted = False
        index = 0
        limit = min(len(text), self.max_chars)
        next_items = _next_list_items(text)
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
                if end > self.max_chars:
                    return _clause_cut(text, self.max_chars)
                if depth == 0 and not quoted:  # 「はい。」と言った。 is one sentence
                    return end if end < len(text) else None
                depth, quoted = _close(text[index + 1:end], depth, quoted)
                index = end
                continue
            elif char in TERMINATORS:
                end = _skip(text, index + 1, TERMINATORS + CLOSERS)
                if end > self.max_chars:  # its run of marks ends past the limit ('Dr.Dr."...'): too long
                    return _clause_cut(text, self.max_chars)
                depth, quoted = _close(text[index + 1:end], depth, quoted)
                inner = depth == 1 and _parenthetical_sentence(text, end)
                decision = self._decide(text, index, end, balanced=(depth == 0 or inner) and not quoted)
                if decision is None or decision:
                    return end if decision else None
                index = end
                continue
            elif char in " \t" and next_items and depth == 0 and not quoted and _has_word(text[:index]):
                starts = _starts_item(text, index + 1, next_items)
                if starts is None or starts:
                    return index + 1 if starts else None  # "1.) Eggs 2.) Milk": the next item starts a chunk
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
        if kind is None:
            return True
        if kind == "never":
            return False
        if kind == "state":
            return text[following].isupper()
        if kind in ("reference", "reference word"):
            # "Chap. I" is a label; "the luckier chap. I did not ..." is not.
            label = _is_label(text, following, roman_one=_word_before(text, period)[1][:1].isupper())
            if label is None or label:
                return None if label is None else False
            if kind == "reference word":
                return True
        return _opens_sentence(text, following, INITIAL_OPENING_WORDS if kind == "initial" else OPENING_WORDS)


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
    """How the word that ends at the terminator ``text[period]`` decides: None (a plain word, the
    sentence ends), "never", "maybe" (ends before an opening word), "initial" (the same, with fewer
    opening words), "reference" or "reference word" (never before a label), "state" (ends
    before a capital letter)."""
    start, word = _word_before(text, period)
    if text[period] != ".":
        return "never" if text[period] == "!" and word in EXCLAIMED_NAMES else None
    if not word:
        return None
    before = text[:start].split()
    if not before and _LIST_MARKER.match(text):
        return "never"  # a list marker opening the chunk: "1.", "b.", "iv.", "A."
    title = word.rsplit("-", 1)[-1]  # "ex-Gov.", "Sept. 29-Oct. 8"
    lowered = title.lower()
    if title in STREET_TITLES and before and before[-1][:1].isupper():
        return "maybe"  # "828 Davis St. It will continue", but "with Dr. Smith"
    if title in TITLES or lowered in LATIN:
        return "never"
    if lowered in REFERENCES:
        return "reference"
    if lowered in REFERENCE_WORDS:
        return "reference word"
    if len(word) == 1 and word.isalpha() and word.isupper():
        if before and before[-1].isalpha() and before[-1].islower():
            return "maybe"  # "you and I. Did you ...", "got an A. Then ..."
        return "initial"  # "J. R. R. Tolkien", "Albert I. Jones"
    if lowered in TIMES:
        # "At 7 p.m. Mr. Smith left" and "... and by 9 a.m. I had finished" are one sentence (the
        # time opens its clause); "He left at 6 p.m. Mr. Smith stayed" is two.
        return "never" if _opens_clause_with_time(before) else "maybe"
    if title in STATES:
        return "state" if before and before[-1].endswith(",") else "maybe"
    if lowered in MAY_END or title in CAPITALISED_MAY_END or title in CITATIONS or _is_initialism(word):
        return "maybe"
    return None


def _word_before(text: str, period: int) -> tuple[int, str]:
    """Where the word that ends at ``text[period]`` starts, and the word without opening marks."""
    start = period
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return start, text[start:period].lstrip("\"'([{“‘«*_")


def _opens_clause_with_time(words: list[str]) -> bool:
    """Do ``words`` (those before a time such as "7 p.m.") end in a clause that opens with the time:
    a preposition and the number at the start of the text or after a conjunction or a comma?"""
    clause: list[str] = []
    for word in reversed(words):
        if word.lower() in ("and", "but", "or", "then") or word[-1] in ",;:":
            break
        clause.insert(0, word)
    return 1 <= len(clause) <= 3 and clause[0].lower() in _TIME_PREPOSITIONS


def _parenthetical_sentence(text: str, end: int) -> bool:
    """Is ``text[:end]`` a sentence of at least four words inside the bracket that opens the chunk,
    still open, with a capitalised word next? A parenthetical of several sentences is split like
    the top level ("(This is long. Followed by more.)"); "(Oh. Again!)" and "(see Fig. 2. It is
    odd)" in the middle of a sentence are not."""
    if text[0] not in OPENING_BRACKETS or len(text[:end].split()) < 4:
        return False
    depth = 0
    for char in text[:end]:
        depth += (char in OPENING_BRACKETS) - (char in CLOSING_BRACKETS)
        if depth == 0:
            return False  # the opening bracket was closed
    return depth == 1 and text[_skip(text, end, " "):][:1].isupper()


def _next_list_items(text: str) -> tuple[str, ...]:
    """The markers of the item after the one that opens ``text`` ("2." after "1.", "b)" after "a)",
    "ii." after "i."); empty when ``text`` does not open with a list marker."""
    match = _LIST_MARKER.match(text)
    if match is None:
        return ()
    value, style = match.groups()
    following: list[str] = []
    if value.isdigit():
        following.append(str(int(value) + 1))
    if len(value) == 1 and value.isalpha() and value not in "zZ":
        following.append(chr(ord(value) + 1))
    if value.lower() in _ROMAN[:-1]:
        roman = _ROMAN[_ROMAN.index(value.lower()) + 1]
        following.append(roman.upper() if value.isupper() else roman)
    return tuple(item + style for item in following)


def _has_word(item: str) -> bool:
    """Does the list item ``item`` (its marker first) hold a word? "A. B. Smith" is a name, not two items."""
    return any(sum(char.isalpha() for char in word) >= 2 for word in item.split()[1:])


def _starts_item(text: str, index: int, markers: tuple[str, ...]) -> bool | None:
    """Does one of ``markers``, then a space, start at ``index``? None: not known yet."""
    rest = text[index:]
    for marker in markers:
        if len(rest) <= len(marker):
            if marker.startswith(rest):
                return None
        elif rest.startswith(marker) and rest[len(marker)].isspace():
            return True
    return False


def _is_label(text: str, index: int, *, roman_one: bool) -> bool | None:
    """Is the token at ``index`` a label ("55", "IV", "3(b)", "A13", "B"; "I" only if ``roman_one``)?
    None: not complete yet."""
    token_end = index
    while token_end < len(text) and not text[token_end].isspace():
        token_end += 1
    if token_end == len(text):
        return None
    token = text[index:token_end].rstrip(".,;:)")
    if token == "I" and not roman_one:
        return False
    return _LABEL.match(token) is not None


def _opens_sentence(text: str, index: int, words: frozenset[str]) -> bool | None:
    """Does the word at ``index`` open a sentence (a common opening word, or a title such as
    "Mr.")? None: the word is not complete yet."""
    word_end = index
    while word_end < len(text) and (text[word_end].isalpha() or text[word_end] in "'’"):
        word_end += 1
    if word_end == len(text):
        return None
    word = text[index:word_end]
    lowered = word.lower().replace("’", "'")
    # A contraction opens a sentence when its first part does: "They'd", "It'll".
    return lowered in words or lowered.split("'")[0] in words or (word in TITLES and text[word_end] == ".")


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
