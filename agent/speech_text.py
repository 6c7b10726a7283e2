"""Speech-ready text: what the TTS should say for a chunk of model output. Pure, no I/O.

Markdown is for eyes: emphasis markers, headings, list bullets, inline code ticks and link targets
are dropped, keeping the words. A decimal point is read as "point", so "3.5" is not spoken as two
numbers with a pause between them.
"""

from __future__ import annotations

import re

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)
_BULLET = re.compile(r"^\s*[-*+•]\s+", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1")
_CODE_TICKS = re.compile(r"`+")
_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")


def to_speech(text: str) -> str:
    """Return the words of ``text`` as the TTS should read them; empty if nothing is speakable."""
    speech = _LINK.sub(r"\1", text)
    speech = _HEADING.sub("", speech)
    speech = _BULLET.sub("", speech)
    speech = _EMPHASIS.sub(r"\2", speech)
    speech = _CODE_TICKS.sub("", speech)
    speech = _DECIMAL.sub(" point ", speech)
    speech = " ".join(speech.split())
    return speech if any(char.isalnum() for char in speech) else ""
