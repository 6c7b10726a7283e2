"""Which requests the TTS server renders in windows: those that ask for it (``"windows": true``, the
agent's first request of an answer), unless the server is set to render everything whole; and the
field itself on the wire. The real app with a stub engine that records what it was asked."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

import tts_protocol as protocol
from tests.support.fake_tts import StubEngine
from tts_protocol.messages import ProtocolError, Synthesize, encode_synthesize, parse_client_message
from tts_server.app import create_app
from tts_server.settings import ServerSettings


def asked(settings: ServerSettings, requests: list[dict]) -> list[bool]:
    engine = StubEngine()
    with TestClient(create_app(settings, load_engine=lambda _: engine)) as client:
        while client.get("/ping").status_code != 200:
            pass
        with client.websocket_connect(protocol.BIDI_PATH) as ws:
            for number, request in enumerate(requests):
                ws.send_text(json.dumps({"type": "synthesize", "request_id": f"r{number}", **request}))
                while True:
                    message = ws.receive()
                    if message.get("text") and json.loads(message["text"])["type"] == protocol.SYNTHESIS_COMPLETE:
                        break
    return engine.windowed


def test_a_request_that_asks_for_windows_gets_them_and_others_do_not():
    requests = [{"text": "Hello there.", "windows": True}, {"text": "Hello there."}]
    assert asked(ServerSettings(), requests) == [True, False]
    assert asked(ServerSettings(windows=False), requests) == [False, False], "windows turned off on the server"


def test_the_windows_field_goes_on_the_wire_only_when_asked_and_must_be_a_boolean():
    assert "windows" not in json.loads(encode_synthesize(Synthesize("a", "Hi.")))
    sent = encode_synthesize(Synthesize("a", "Hi.", windows=True))
    assert parse_client_message(sent, default_request_id="x").windows is True
    with pytest.raises(ProtocolError, match="windows must be true or false") as refused:
        parse_client_message(json.dumps({"text": "Hi.", "windows": "yes"}), default_request_id="x")
    assert refused.value.code == protocol.BAD_REQUEST
