"""English text to Kokoro phonemes, offline: espeak-ng (bundled by ``espeakng-loader``) through
``phonemizer``, with espeak's IPA mapped onto the symbol set Kokoro v1.0 was trained with
(misaki's: diphthongs as single letters, affricates as single symbols).
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata

import espeakng_loader
from phonemizer.backend import EspeakBackend
from phonemizer.backend.espeak.wrapper import EspeakWrapper

TIE = "^"

# espeak-ng IPA -> Kokoro symbols, applied longest first. The tie character joins the two halves
# of diphthongs and affricates, so they can be replaced as units.
_ESPEAK_TO_KOKORO = sorted({
    "\u0303": "", "a^ɪ": "I", "a^ʊ": "W", "d^ʒ": "ʤ", "e": "A", "e^ɪ": "A", "r": "ɹ", "t^ʃ": "ʧ",
    "x": "k", "ç": "k", "ɐ": "ə", "ɔ^ɪ": "Y", "ə^l": "ᵊl", "ɚ": "əɹ", "ɬ": "l", "ʔ": "t",
    "ʔn": "tᵊn", "ʔˌn\u0329": "tᵊn", "ʲ": "", "ʲO": "jO", "ʲQ": "jQ",
}.items(), key=lambda pair: -len(pair[0]))

# American English specifics, applied after the table above.
_AMERICAN = (("o^ʊ", "O"), ("ɜːɹ", "ɜɹ"), ("ɜː", "ɜɹ"), ("ɪə", "iə"), ("ː", ""))

_SYLLABIC = re.compile(r"(\S)\u0329")


class EnglishG2P:
    """American English grapheme-to-phoneme conversion for Kokoro.

    espeak-ng keeps global state, so calls are serialised with a lock; a call takes well under a
    millisecond per sentence, so the lock is never the bottleneck next to synthesis.
    """

    def __init__(self) -> None:
        EspeakWrapper.set_library(espeakng_loader.get_library_path())
        EspeakWrapper.set_data_path(espeakng_loader.get_data_path())
        # phonemizer warns on every line whose word count changed around punctuation: noise here.
        quiet = logging.getLogger(f"{__name__}.phonemizer")
        quiet.setLevel(logging.ERROR)
        self._backend = EspeakBackend(language="en-us", preserve_punctuation=True, with_stress=True, tie=TIE,
                                      logger=quiet)
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        text = readable_text(text)
        if not text.strip():
            return ""
        with self._lock:
            phonemes = self._backend.phonemize([text], strip=True)
        return to_kokoro_symbols(phonemes[0] if phonemes else "")

    def words(self, words: list[str]) -> list[str]:
        """Each word's phonemes on its own, in one call (one entry per word, in order)."""
        lines = [readable_text(word) for word in words]
        if not lines:
            return []
        with self._lock:
            phonemes = self._backend.phonemize(lines, strip=True)
        return [to_kokoro_symbols(line) for line in phonemes]


UNREADABLE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "So", "Sk"}
"""Unicode categories the English G2P must not see: control and format characters, surrogates,
private and unassigned code points, and symbols (emoji): espeak would read emoji out by name
("grinning party rocket") and control sequences as numbers."""
UNREADABLE_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")
"""Scripts the English G2P cannot read: espeak says "Chinese letter" for each character."""


def readable_text(text: str) -> str:
    """The text with what the English G2P cannot read replaced by spaces (line breaks and tabs kept)."""
    return "".join(
        " " if (unicodedata.category(char) in UNREADABLE_CATEGORIES and char not in "\t\n\r")
        or (unicodedata.category(char) == "Lo" and unicodedata.name(char, "").startswith(UNREADABLE_SCRIPTS))
        else char
        for char in text)


def to_kokoro_symbols(espeak_ipa: str) -> str:
    """Map espeak-ng IPA (phonemized with tie ``^``) onto Kokoro's phoneme symbols."""
    phonemes = espeak_ipa
    for old, new in _ESPEAK_TO_KOKORO:
        phonemes = phonemes.replace(old, new)
    phonemes = _SYLLABIC.sub(r"ᵊ\1", phonemes).replace("\u0329", "")
    for old, new in _AMERICAN:
        phonemes = phonemes.replace(old, new)
    # espeak older than 1.52 writes "o" where Kokoro expects "ɔ".
    return phonemes.replace("o", "ɔ").replace(TIE, "")
