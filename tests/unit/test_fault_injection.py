"""The fault campaign's pure parts: the proxy's reading and writing of WebSocket frames, and the
judge that compares an answer with the undisturbed reference."""

from __future__ import annotations

import pytest

from voice_agent.bench.faults import Answered, judge
from voice_agent.dev.fault_proxy import OPCODE_BINARY, OPCODE_TEXT, parse_frame, text_frame


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536])
def test_a_server_frame_of_any_length_is_read_whole_and_only_when_whole(size):
    frame = text_frame("x" * size)
    assert parse_frame(frame + b"\x82\x00") == (OPCODE_TEXT, b"x" * size, len(frame))
    assert parse_frame(frame[:-1]) is None if size else parse_frame(frame[:1]) is None


def test_a_binary_frame_is_told_from_a_text_frame():
    assert parse_frame(b"\x82\x03abc") == (OPCODE_BINARY, b"abc", 5)


def answered(ended: str, sentences: list[tuple[int, str]], audio: dict[int, bytes], error: str = "") -> Answered:
    result = Answered()
    result.sentences, result.ended, result.error = sentences, ended, error
    result.audio = {index: bytearray(data) for index, data in audio.items()}
    return result


REFERENCE = answered("end", [(0, "One."), (1, "Two.")], {0: b"aaaa", 1: b"bbbb"})


def test_an_answer_like_the_reference_recovered():
    assert judge(answered("end", REFERENCE.sentences, {0: b"aaaa", 1: b"bbbb"}), REFERENCE)["outcome"] == "recovered"


def test_a_lost_a_repeated_and_a_corrupted_sentence_are_each_counted():
    lost = judge(answered("end", [(0, "One.")], {0: b"aaaa"}), REFERENCE)
    repeated = judge(answered("end", [(0, "One."), (0, "One."), (1, "Two.")], {0: b"aaaa", 1: b"bbbb"}), REFERENCE)
    corrupted = judge(answered("end", REFERENCE.sentences, {0: b"aaaa", 1: b"bbXb"}), REFERENCE)
    assert (lost["lost"], lost["outcome"]) == (1, "damaged")
    assert (repeated["duplicated"], repeated["outcome"]) == (1, "damaged")
    assert (corrupted["corrupted"], corrupted["outcome"]) == (1, "damaged")


def test_an_error_after_whole_and_cut_sentences_failed_cleanly_but_not_after_wrong_audio():
    clean = answered("error", REFERENCE.sentences, {0: b"aaaa", 1: b"bb"}, "tts_failed: timeout")
    wrong = answered("error", REFERENCE.sentences, {0: b"aaXa"}, "tts_failed: timeout")
    assert judge(clean, REFERENCE)["outcome"] == "failed_cleanly"
    assert judge(wrong, REFERENCE)["outcome"] == "damaged"
    assert judge(answered("broken", [], {}), REFERENCE)["outcome"] == "damaged"
