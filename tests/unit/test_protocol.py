"""The wire protocol core: parsing and classification, no I/O."""

from __future__ import annotations

import json

import pytest

import tts_protocol as protocol


def test_a_synthesize_message_parses_from_text_and_from_utf8_bytes():
    message = protocol.encode_synthesize(protocol.Synthesize("r1", "Grüße, world.", voice="jf_alpha", speed=1.2))
    for payload in (message, message.encode("utf-8")):
        parsed = protocol.parse_client_message(payload, default_request_id="unused")
        assert parsed == protocol.Synthesize("r1", "Grüße, world.", voice="jf_alpha", speed=1.2)


def test_text_without_type_is_a_synthesize_request_with_a_server_assigned_id():
    parsed = protocol.parse_client_message('{"text": "Hi."}', default_request_id="req-7")
    assert parsed == protocol.Synthesize("req-7", "Hi.")


def test_cancel_and_close_parse():
    assert protocol.parse_client_message(protocol.encode_cancel(), default_request_id="x") == protocol.Cancel()
    assert protocol.parse_client_message(protocol.encode_close().encode(), default_request_id="x") == protocol.Close()


@pytest.mark.parametrize(("payload", "code", "names_request"), [
    (b"\x80\x81", protocol.BAD_REQUEST, False),
    ("[]", protocol.BAD_REQUEST, False),
    ('{"type": "dance"}', protocol.UNKNOWN_TYPE, False),
    ('{"type": "synthesize", "request_id": "a", "text": 5}', protocol.BAD_REQUEST, True),
    ('{"type": "synthesize", "request_id": "a", "text": "   "}', protocol.EMPTY_TEXT, True),
    ('{"request_id": "a", "text": "hi", "speed": "fast"}', protocol.BAD_SPEED, True),
    ('{"request_id": "a", "text": "hi", "speed": 0.1}', protocol.BAD_SPEED, True),
    ('{"request_id": "a", "text": "hi", "speed": true}', protocol.BAD_SPEED, True),
    ('{"request_id": "a", "text": "hi", "format": "flac"}', protocol.UNSUPPORTED_FORMAT, True),
    ('{"request_id": "a", "text": "hi", "voice": 3}', protocol.BAD_REQUEST, True),
    (json.dumps({"request_id": "a", "text": "x" * (protocol.MAX_TEXT_CHARS + 1)}), protocol.TEXT_TOO_LONG, True),
    ("x" * (protocol.MAX_MESSAGE_BYTES + 1), protocol.MESSAGE_TOO_LARGE, False),
    ("[" * 100_000, protocol.MESSAGE_TOO_LARGE, False),
    ("[" * 10_000 + "]" * 10_000, protocol.BAD_REQUEST, False),
])
def test_invalid_messages_raise_a_protocol_error_with_a_code(payload, code, names_request):
    with pytest.raises(protocol.ProtocolError) as raised:
        protocol.parse_client_message(payload, default_request_id="default")
    assert raised.value.code == code
    assert (raised.value.request_id == "a") == names_request


def test_binary_server_frames_are_control_only_when_the_whole_payload_is_a_known_message():
    start = protocol.encode_synthesis_start("r1").encode()
    assert protocol.parse_server_message(start) == protocol.SynthesisStart("r1", 24_000, "pcm16")
    # PCM that happens to begin with "{" is audio, and so is valid JSON without a known type.
    for audio in (b"{\x00\x01\x02", b'{"type": "unknown"}', b'{"a": 1}', b"\x7b" * 9600):
        assert protocol.parse_server_message(audio) == audio


def test_text_server_frames_must_be_control_messages():
    complete = protocol.encode_synthesis_complete("r1", audio_bytes=10)
    assert protocol.parse_server_message(complete) == protocol.SynthesisComplete("r1", {"audio_bytes": 10})
    error = protocol.encode_error(None, protocol.BAD_REQUEST, "nope")
    assert protocol.parse_server_message(error) == protocol.Error(None, protocol.BAD_REQUEST, "nope")
    with pytest.raises(ValueError):
        protocol.parse_server_message('{"type": "mystery"}')


def test_wav_wrapping_keeps_the_samples():
    pcm = bytes(range(200))
    wav = protocol.pcm16_to_wav(pcm)
    assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE"
    assert wav.endswith(pcm)
    assert protocol.pcm16_seconds(48_000) == 1.0
