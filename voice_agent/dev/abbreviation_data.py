"""Regenerate ``CITATIONS`` in ``agent/abbreviations.py`` from others' abbreviation lists.

The single-period abbreviations of nupunkt 0.8.0's general and legal lists (MIT), capitalised (not
all capitals), at most six letters, kept only where the lower-case form is rare as an English word
(wordfreq 3.1.1 Zipf frequency below 3.5: fewer than about three uses per million words), so
``Supp.`` and ``Cir.`` are in and ``Bank.`` and ``Park.`` are not. Neither package is a dependency of
the product: install them into a scratch environment and run

    python -m voice_agent.dev.abbreviation_data > citations.txt

then paste the printed lines into the ``CITATIONS`` block.
"""

from __future__ import annotations

import importlib.resources
import json
import textwrap

MAX_LETTERS = 6
MAX_ZIPF = 3.5
LISTS = ("general_abbreviations.json", "legal_abbreviations.json")


def citations() -> list[str]:
    from wordfreq import zipf_frequency

    data = importlib.resources.files("nupunkt") / "data"
    found: set[str] = set()
    for name in LISTS:
        for abbreviation in json.loads((data / name).read_text(encoding="utf-8")):
            word = abbreviation[:-1]
            if (abbreviation.count(".") == 1 and abbreviation.endswith(".") and word.isalpha()
                    and word[0].isupper() and not word.isupper() and len(word) <= MAX_LETTERS
                    and zipf_frequency(word.lower(), "en") < MAX_ZIPF):
                found.add(word)
    return sorted(found)


if __name__ == "__main__":
    print(textwrap.fill(" ".join(citations()), width=110))
