"""SSE reassembly on the caller's side, whatever the transport's chunk boundaries."""

from __future__ import annotations

import json

import pytest

from caller_protocol import AnswerProtocolError, SSEDecoder

EVENTS = [{"type": "text", "text": "Grüße — ünïcode ✓"}, {"type": "audio", "audio": "AAEC" * 50},
          {"type": "end", "metrics": {}}]
STREAM = b"".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in EVENTS)


def decode(chunks: list[bytes]) -> list[dict]:
    decoder = SSEDecoder()
    out = [json.loads(data) for chunk in chunks for data in decoder.feed(chunk)]
    decoder.close()
    return out


def test_every_split_point_gives_the_same_events():
    for cut in range(1, len(STREAM)):
        assert decode([STREAM[:cut], STREAM[cut:]]) == EVENTS


def test_one_byte_at_a_time():
    assert decode([STREAM[i:i + 1] for i in range(len(STREAM))]) == EVENTS


def test_crlf_line_ends_comments_and_multi_line_data():
    stream = b": keep-alive\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: x\ndata:{\"b\": 2}\n\n"
    assert decode([stream]) == [{"a": 1}, {"b": 2}]


def test_a_stream_cut_inside_an_event_is_an_error():
    decoder = SSEDecoder()
    decoder.feed(STREAM[:-1])
    with pytest.raises(AnswerProtocolError):
        decoder.close()
