"""The TTS session's two state machines, driven without a socket: what each side may send, and
what each message means, in every order the protocol allows (and some it does not)."""

from __future__ import annotations

import json

import pytest

import tts_protocol as protocol
from tts_protocol.client import (
    Audio,
    ClientSession,
    Completed,
    Failed,
    Notice,
    ProtocolViolation,
    Refused,
    Started,
    Words,
)
from tts_protocol.server import EndOfInput, Job, Reply, ServerSession


def start(request_id: str) -> str:
    return protocol.encode_synthesis_start(request_id)


# The client -----------------------------------------------------------------------------------


def test_pipelined_requests_get_their_own_audio_in_order():
    client = ClientSession(id_prefix="t")
    first, _ = client.synthesize("One.")
    second, _ = client.synthesize("Two.")
    assert client.pending == (first, second)
    happened = [event for frame in (start(first), b"aa", protocol.encode_synthesis_complete(first, audio_bytes=2),
                                    start(second), b"bbb", protocol.encode_synthesis_complete(second))
                for event in client.receive(frame)]
    assert happened == [Started(first, 24_000, "pcm16"), Audio(first, b"aa"), Completed(first, {"audio_bytes": 2}),
                        Started(second, 24_000, "pcm16"), Audio(second, b"bbb"), Completed(second, {})]
    assert client.pending == ()


def test_audio_that_begins_with_a_brace_is_audio():
    client = ClientSession()
    request_id, _ = client.synthesize("Hi.")
    client.receive(start(request_id))
    assert client.receive(b'{"type": "error"') == [Audio(request_id, b'{"type": "error"')]


@pytest.mark.parametrize("frame", [b"audio", protocol.encode_synthesis_complete("nobody"), start("nobody")])
def test_a_frame_the_protocol_does_not_allow_here_is_a_violation(frame):
    client = ClientSession()
    client.synthesize("Hi.")
    with pytest.raises(ProtocolViolation):
        client.receive(frame)


def test_a_second_final_reply_for_a_request_is_a_violation():
    client = ClientSession()
    request_id, _ = client.synthesize("Hi.")
    client.receive(protocol.encode_error(request_id, protocol.UNKNOWN_VOICE, "no"))
    with pytest.raises(ProtocolViolation):
        client.receive(protocol.encode_synthesis_complete(request_id))


def test_after_a_reconnection_each_byte_is_delivered_once_and_the_start_once():
    client = ClientSession()
    first, _ = client.synthesize("One.")
    second, _ = client.synthesize("Two.")
    client.receive(start(first))
    assert client.receive(b"abc") == [Audio(first, b"abc")]
    resent = client.resend()
    assert [json.loads(message)["request_id"] for message in resent] == [first, second]
    assert client.receive(start(first)) == [], "the start was already reported"
    assert client.receive(b"ab") == [], "already delivered"
    assert client.receive(b"cdef") == [Audio(first, b"def")]
    assert client.receive(protocol.encode_synthesis_complete(first))[0] == Completed(first, {})


WORDS = (protocol.Word("Hello,", 12.5, 300.0), protocol.Word("there.", 350.0, 700.0))


def test_words_come_before_the_audio_they_time_and_are_delivered_once_across_a_reconnection():
    client = ClientSession()
    request_id, _ = client.synthesize("Hello, there.")
    words = protocol.encode_words(request_id, WORDS)
    first = [event for frame in (start(request_id), *words, b"aaaa") for event in client.receive(frame)]
    assert first == [Started(request_id, 24_000, "pcm16"), Words(request_id, WORDS), Audio(request_id, b"aaaa")]
    client.resend()
    again = [event for frame in (start(request_id), *words, b"aaaabb") for event in client.receive(frame)]
    assert again == [Audio(request_id, b"bb")]


def test_words_outside_their_synthesis_are_a_violation():
    client = ClientSession()
    request_id, _ = client.synthesize("Hi.")
    with pytest.raises(ProtocolViolation):
        client.receive(protocol.encode_words(request_id, WORDS)[0])


def test_many_words_are_split_into_messages_that_each_fit_a_control_frame():
    words = [protocol.Word("w" * (index % 150), index * 10.0, index * 10.0 + 5) for index in range(1_000)]
    messages = protocol.encode_words("r", words)
    assert len(messages) > 1 and all(len(message.encode()) <= protocol.MAX_CONTROL_BYTES for message in messages)
    parsed = [word for message in messages for word in protocol.parse_server_message(message.encode()).words]
    assert [word.start_ms for word in parsed] == [word.start_ms for word in words]
    assert max(len(word.word) for word in parsed) == protocol.MAX_WORD_CHARS


@pytest.mark.parametrize("entry", [{"word": 1, "start_ms": 0, "end_ms": 1}, {"word": "a", "start_ms": "0", "end_ms": 1},
                                   {"word": "a", "start_ms": True, "end_ms": 1}, "a"])
def test_a_malformed_words_message_is_not_a_control_message(entry):
    message = json.dumps({"type": protocol.WORDS, "request_id": "r", "words": [entry]})
    with pytest.raises(ValueError):
        protocol.parse_server_message(message)


def test_a_refused_session_fails_every_request_at_once():
    client = ClientSession()
    ids = [client.synthesize(text)[0] for text in ("One.", "Two.")]
    happened = client.receive(protocol.encode_error(None, protocol.OVERLOADED, "full"))
    refusal = protocol.Error(None, protocol.OVERLOADED, "full")
    assert happened == [Refused(refusal), *(Failed(i, protocol.OVERLOADED, "full") for i in ids)]
    assert client.pending == ()


def test_an_error_tied_to_no_request_is_a_notice_and_changes_nothing():
    client = ClientSession()
    request_id, _ = client.synthesize("Hi.")
    assert client.receive(protocol.encode_error(None, protocol.BAD_REQUEST, "?")) == [
        Notice(protocol.Error(None, protocol.BAD_REQUEST, "?"))]
    assert client.pending == (request_id,)


# The server -----------------------------------------------------------------------------------


def job(action) -> Job:
    assert isinstance(action, Job)
    return action


def test_every_request_gets_one_final_reply_in_its_turn_even_a_refused_one():
    server = ServerSession()
    good = job(server.receive(json.dumps({"type": "synthesize", "request_id": "a", "text": "Hi."})))
    refused = job(server.receive(json.dumps({"type": "synthesize", "request_id": "b", "text": "Hi.", "speed": 9})))
    assert server.busy
    assert json.loads(server.start(good))["type"] == protocol.SYNTHESIS_START
    assert server.audio(good, b"pcm") == b"pcm"
    assert json.loads(server.complete(good, audio_bytes=3))["type"] == protocol.SYNTHESIS_COMPLETE
    assert server.complete(good) is None and server.fail(good, "x", "y") is None, "one final reply only"
    assert json.loads(server.refusal(refused))["code"] == protocol.BAD_SPEED
    assert not server.busy


def test_cancel_stops_the_audio_of_every_unanswered_request_and_answers_each_cancelled():
    server = ServerSession()
    jobs = [job(server.receive(json.dumps({"type": "synthesize", "request_id": rid, "text": "Hi."})))
            for rid in ("a", "b")]
    assert server.receive(json.dumps({"type": "cancel"})) is None
    assert server.start(jobs[0]) is None and server.audio(jobs[0], b"pcm") is None
    assert [json.loads(server.complete(each))["code"] for each in jobs] == [protocol.CANCELLED] * 2


def test_a_cancelled_request_sends_no_more_words():
    server = ServerSession()
    job = server.receive(protocol.encode_synthesize(protocol.Synthesize("a", "Hello, there.")))
    assert server.words(job, WORDS) == protocol.encode_words("a", WORDS)
    server.receive(protocol.encode_cancel())
    assert server.words(job, WORDS) == []


def test_a_message_naming_no_request_is_answered_at_once_and_the_session_goes_on():
    server = ServerSession()
    reply = server.receive(b"\xff not json")
    assert isinstance(reply, Reply) and json.loads(reply.text)["request_id"] is None
    assert isinstance(server.receive(json.dumps({"text": "Still here."})), Job)


def test_beyond_the_queue_limit_a_request_is_refused_at_once_with_queue_full():
    server = ServerSession(max_queued=2)
    for rid in ("a", "b"):
        job(server.receive(json.dumps({"request_id": rid, "text": "Hi."})))
    refused = server.receive(json.dumps({"request_id": "c", "text": "Hi."}))
    assert isinstance(refused, Reply) and json.loads(refused.text)["code"] == protocol.QUEUE_FULL


def test_close_ends_input_and_later_messages_are_refused():
    server = ServerSession()
    assert isinstance(server.receive(json.dumps({"type": "close"})), EndOfInput)
    late = server.receive(json.dumps({"text": "Too late."}))
    assert isinstance(late, Reply) and json.loads(late.text)["code"] == protocol.BAD_REQUEST


def test_a_client_and_a_server_machine_talk_to_each_other():
    client, server = ClientSession(), ServerSession()
    request_id, message = client.synthesize("Hello.")
    work = job(server.receive(message))
    frames = [server.start(work), server.audio(work, b"\x01\x02"), server.complete(work, audio_bytes=2)]
    happened = [event for frame in frames for event in client.receive(frame)]
    assert happened[-1] == Completed(request_id, {"audio_bytes": 2})
