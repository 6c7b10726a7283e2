"""Speech-ready text: markdown is dropped, words are kept."""

from __future__ import annotations

import pytest

from agent.speech_text import to_speech


@pytest.mark.parametrize(("written", "spoken"), [
    ("**Batch** waits for the _full_ answer.", "Batch waits for the full answer."),
    ("## Batch vs. incremental", "Batch vs. incremental"),
    ("- a bullet item", "a bullet item"),
    ("See [the guide](https://example.com/guide) now.", "See the guide now."),
    ("Run `voice-agent demo` today.", "Run voice-agent demo today."),
    ("It is 3.5 times faster.", "It is 3 point 5 times faster."),
    ("Plain sentence.", "Plain sentence."),
])
def test_markdown_is_removed_and_words_kept(written, spoken):
    assert to_speech(written) == spoken


@pytest.mark.parametrize("written", ["---", "**", "...", "  "])
def test_text_with_nothing_to_say_becomes_empty(written):
    assert to_speech(written) == ""
