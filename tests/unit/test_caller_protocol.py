"""The caller protocol without a socket: requests and their validation, the /ws messages, and the
caller's reading of an answer on either leg."""

from __future__ import annotations

import json
import re
from importlib.resources import files

import pytest

from caller_protocol import AnswerProtocolError, AnswerReader, RequestError, checked_session_id, events, requests


def test_a_request_round_trips_through_its_ask_message():
    request = requests.VoiceRequest("Hi?", mode="batch", voice="af_heart", speed=1.5, format="mp3")
    assert requests.parse_ws_message(requests.encode_ask(request)) == requests.Ask(request)


@pytest.mark.parametrize(("payload", "complaint"), [
    ({"prompt": ""}, "prompt"), ({"prompt": "x" * 4001}, "4001"), ({"prompt": "x", "mode": "loud"}, "mode"),
    ({"prompt": "x", "speed": 3}, "speed"), ({"prompt": "x", "speed": True}, "speed"),
    ({"prompt": "x", "voice": "a b"}, "voice"), ({"prompt": "x", "format": "flac"}, "format"),
    ({"prompt": "x", "colour": "red"}, "colour"), ([1], "object"),
])
def test_a_bad_request_is_refused_with_what_to_fix(payload, complaint):
    with pytest.raises(requests.RequestError, match=complaint):
        requests.VoiceRequest.from_payload(payload)


@pytest.mark.parametrize("data", [None, "not json", b"\xff", json.dumps([1]), json.dumps({"type": "dance"}),
                                  "[" * 100_000])
def test_a_ws_message_that_is_neither_ask_nor_cancel_is_unreadable(data):
    with pytest.raises(requests.UnreadableMessage):
        requests.parse_ws_message(data)


def test_cancel_parses_and_an_ask_with_a_bad_request_is_a_request_error_not_unreadable():
    assert requests.parse_ws_message(json.dumps({"type": requests.CANCEL})) == requests.Cancel()
    with pytest.raises(requests.RequestError) as refused:
        requests.parse_ws_message(json.dumps({"type": requests.ASK, "prompt": "x", "mode": "sideways"}))
    assert not isinstance(refused.value, requests.UnreadableMessage)


def ws_frames(audio: bytes) -> list[str | bytes]:
    header, data = events.split_audio({**events.audio(0, audio, 24_000), "seq": 1})
    return [json.dumps({**events.start("incremental", 24_000, "pcm16", None, 1), "seq": 0}), json.dumps(header),
            data, json.dumps({**events.end({}), "seq": 2})]


def test_the_reader_gives_the_same_events_from_either_leg():
    audio = b"\x00\x01" * 10
    reader = AnswerReader()
    from_ws = [event for frame in ws_frames(audio) for event in reader.feed_ws(frame)]
    assert reader.finished
    sse = b"".join(events.to_sse(event) for event in (
        {**events.start("incremental", 24_000, "pcm16", None, 1), "seq": 0},
        {**events.audio(0, audio, 24_000), "seq": 1}, {**events.end({}), "seq": 2}))
    from_sse = AnswerReader().feed_sse(sse)
    assert [event["type"] for event in from_ws] == [event["type"] for event in from_sse] == ["start", "audio", "end"]
    assert from_ws[1]["data"] == from_sse[1]["data"] == audio


@pytest.mark.parametrize("broken", ["text where the audio belongs", "a length that lies", "an event after the end"])
def test_the_reader_refuses_a_malformed_answer(broken):
    frames = ws_frames(b"\x00\x01" * 10)
    if broken == "text where the audio belongs":
        frames[2] = "{}"
    elif broken == "a length that lies":
        frames[2] = frames[2][:-1]
    else:
        frames.append(frames[0])
    reader = AnswerReader()
    with pytest.raises(AnswerProtocolError):
        for frame in frames:
            reader.feed_ws(frame)


def test_an_answer_that_stops_before_its_end_is_an_error():
    reader = AnswerReader()
    reader.feed_ws(ws_frames(b"")[0])
    with pytest.raises(AnswerProtocolError):
        reader.close()


def test_every_error_code_is_in_the_schema_and_every_event_type_has_a_variant():
    schema = events.schema()
    kinds = {variant["properties"]["type"]["const"] for variant in schema["oneOf"]}
    assert kinds == {events.START, events.TEXT, events.SENTENCE, events.WORDS, events.AUDIO, events.END, events.ERROR}
    error = next(v for v in schema["oneOf"] if v["properties"]["type"]["const"] == events.ERROR)
    assert error["properties"]["code"]["enum"] == list(events.ERROR_CODES)
    start = next(v for v in schema["oneOf"] if v["properties"]["type"]["const"] == events.START)
    assert start["properties"]["format"]["enum"] == list(requests.FORMATS)


def test_the_browser_page_speaks_the_caller_protocol():
    """The page's literals are the protocol's: its messages, route, event types and format."""
    page = (files("agent") / "web" / "index.html").read_text()
    assert re.search(rf'type:\s*"{requests.ASK}"', page) and re.search(rf'type:\s*"{requests.CANCEL}"', page)
    assert f'"{requests.WS_PATH}"' in page or f"'{requests.WS_PATH}'" in page or f"{requests.WS_PATH}`" in page
    for kind in re.findall(r'case "(\w+)"', page):
        assert kind in (events.START, events.TEXT, events.SENTENCE, events.WORDS, events.AUDIO, events.END,
                        events.ERROR), kind
    for fmt in re.findall(r'format:\s*"(\w+)"', page):
        assert fmt in requests.FORMATS
    assert f"{requests.PLAYED_MS}:" in page and f"payload.{requests.PLAYED_MS}" in page


def test_a_cancel_or_an_ask_may_say_how_much_of_the_answer_was_played():
    assert requests.parse_ws_message(requests.encode_cancel(1234.5)) == requests.Cancel(1234.5)
    assert requests.parse_ws_message(requests.encode_cancel()) == requests.Cancel(None)
    ask = requests.parse_ws_message(requests.encode_ask(requests.VoiceRequest("Next?"), played_ms=80))
    assert ask == requests.Ask(requests.VoiceRequest("Next?"), 80.0)


@pytest.mark.parametrize("played", ["-1", '"12"', "true", "1e999", "[]"])
def test_a_played_position_that_is_not_a_number_of_milliseconds_is_refused(played):
    with pytest.raises(requests.UnreadableMessage, match="played_ms"):
        requests.parse_ws_message(f'{{"type": "cancel", "played_ms": {played}}}')


@pytest.mark.parametrize("session_id", ["s", "voice-agent-" + "0" * 32, "a" * 256, "arn:session_1.2-x"])
def test_a_session_id_of_letters_digits_and_separators_up_to_256_characters_is_one(session_id):
    assert checked_session_id(session_id) == session_id


def test_no_session_header_or_an_empty_one_is_no_session():
    assert checked_session_id(None) is None and checked_session_id("") is None


@pytest.mark.parametrize("session_id", ["a" * 257, "two words", "_first", "tab\there", "<script>", "ü"])
def test_anything_else_is_refused_saying_what_a_session_id_is_without_echoing_it(session_id):
    with pytest.raises(RequestError, match="a session id is 1 to 256") as refused:
        checked_session_id(session_id)
    assert session_id not in str(refused.value)
