"""Speech-ready text: markdown is dropped, words are kept, numbers are read as words."""

from __future__ import annotations

import pytest

from agent.speech_text import SpeechText, to_speech


@pytest.mark.parametrize(("written", "spoken"), [
    ("**Batch** waits for the _full_ answer.", "Batch waits for the full answer."),
    ("***Both*** marks.", "Both marks."),
    ("## Batch versus incremental", "Batch versus incremental"),
    ("- a bullet item", "a bullet item"),
    ("1. First step", "First step"),
    ("> a quoted line", "a quoted line"),
    ("See [the guide](https://example.com/guide) now.", "See the guide now."),
    ("Read https://docs.example.com/a/b?c=d first.", "Read docs.example.com first."),
    ("Run `voice-agent demo` today.", "Run voice-agent demo today."),
    ("Great work 🎉🚀!", "Great work !"),
    ("Match *.py files.", "Match *.py files."),
    ("Compute x**y now.", "Compute x**y now."),
    ("snake_case_name stays.", "snake_case_name stays."),
])
def test_markdown_is_removed_and_other_symbols_kept(written, spoken):
    assert to_speech(written) == spoken


@pytest.mark.parametrize(("written", "spoken"), [
    ("It costs $42.50 today.", "It costs forty-two dollars and fifty cents today."),
    ("It costs $1 now.", "It costs one dollar now."),
    ("The fund has $1.2 billion.", "The fund has one point two billion dollars."),
    ("Pay €3.99 or £2.50.", "Pay three euros and ninety-nine cents or two pounds and fifty pence."),
    ("Growth was 52.4%.", "Growth was fifty-two point four percent."),
    ("It is 3.5 times faster.", "It is three point five times faster."),
    ("About 1,000,000 people.", "About one million people."),
    ("It sold 12,500 units.", "It sold twelve thousand, five hundred units."),
    ("The 5th run.", "The fifth run."),
    ("In 2024 it rained.", "In twenty twenty-four it rained."),
    ("Meet on 2024-03-15.", "Meet on March fifteenth, twenty twenty-four."),
    ("It opens Jan. 5 or March 21st.", "It opens January fifth or March twenty-first."),
    ("The train leaves at 10:45 or 9:00 or 7:05.",
     "The train leaves at ten forty-five or nine o'clock or seven oh five."),
    ("Open 9:00-17:30 daily.", "Open nine o'clock to seventeen thirty daily."),
    ("It took 329.3 ms.", "It took three hundred and twenty-nine point three milliseconds."),
    ("Use 2 GB and 1 km.", "Use two gigabytes and one kilometer."),
    ("Upgrade to v2.1.3 now.", "Upgrade to version two point one point three now."),
    ("Ping 10.0.0.1 first.", "Ping ten dot zero dot zero dot one first."),
    ("It is -5 degrees.", "It is minus five degrees."),
    ("Compute 2 * 3.", "Compute two times three."),
    ("Dr. Smith vs. Mr. Jones, e.g. here, i.e. there, etc.",
     "Doctor Smith versus Mister Jones, for example here, that is there, et cetera"),
    ("Read No. 5 & No. 6.", "Read number five and number six."),
    # found by Kokoro-FastAPI's number cases (voice_agent/bench/number_sentences.py)
    ("To put it weirdly -$6.9 million", "To put it weirdly minus six point nine million dollars"),
    ("Lap time 1:02:03", "Lap time one oh two and three seconds"),
    ("Finished in 0:05:01", "Finished in zero oh five and one second"),
    ("It is currently 1:00 pm, not 9:00 a.m.", "It is currently one pm, not nine a m"),
    ("He found 1.6k of the 10k bricks", "He found one point six thousand of the ten thousand bricks"),
    ("A 4K screen.", "A 4K screen."),  # left to the phonemizer, which reads "four K"
    ("The 1980S were loud, the 1990s and 1900s too.",
     "The nineteen eighties were loud, the nineteen nineties and nineteen hundreds too."),
    ("the 3,497th item", "the three thousand, four hundred and ninety-seventh item"),
    ("Only .5 left", "Only zero point five left"),
    ("Pay x-$3 and 3 s.", "Pay x-three dollars and three seconds."),
])
def test_numbers_and_abbreviations_are_read_as_words(written, spoken):
    assert to_speech(written) == spoken


@pytest.mark.parametrize("written", ["---", "**", "...", "  ", "🎉", "```"])
def test_text_with_nothing_to_say_becomes_empty(written):
    assert to_speech(written) == ""


def test_a_fenced_code_block_is_skipped_line_by_line_and_can_be_read_instead():
    lines = ["Here is code:", "```python", "print(42)", "```", "That was it."]
    skip = SpeechText()
    assert [skip(line) for line in lines] == ["Here is code:", "", "", "", "That was it."]
    read = SpeechText(code_blocks="read")
    assert [read(line) for line in lines] == ["Here is code:", "", "print(forty-two)", "", "That was it."]
