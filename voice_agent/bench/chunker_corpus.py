"""The sentence-boundary corpora shared by the chunker tests and benchmark: (category, text, chunks).

``corpora/own.jsonl`` is the project's own corpus, written by hand per category together with the
chunker (so it measures the chunker's author as much as the chunker). The chunker is run on it
with its latency controls off (``min_chars=0``, ``quick_first_chunk=False``) so the corpus measures
boundary detection alone; the latency controls have their own tests.
"""

from __future__ import annotations

import importlib.resources
import json

Case = tuple[str, str, list[str]]

CORPORA = importlib.resources.files("voice_agent.bench") / "corpora"


def load(name: str) -> list[Case]:
    """The cases of ``corpora/<name>.jsonl``: one ``{"category", "text", "chunks"}`` object per line."""
    lines = (CORPORA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [(case["category"], case["text"], case["chunks"]) for case in map(json.loads, filter(None, lines))]


CASES: list[Case] = load("own")
