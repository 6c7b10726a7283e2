"""The TTS container's routes through Starlette's test client, in process, with a stub engine:
the same app, settings, service, session and protocol as in production, no Kokoro."""

from __future__ import annotations

import io
import json
import time
import wave

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

import tts_protocol as protocol
from tests.support.fake_tts import StubEngine, fake_pcm, fake_words
from tts_server.app import create_app
from tts_server.settings import ServerSettings


def healthy(client: TestClient) -> TestClient:
    deadline = time.monotonic() + 10
    while client.get("/ping").status_code != 200:
        assert time.monotonic() < deadline, client.get("/ping").json()
        time.sleep(0.01)
    return client


@pytest.fixture
def client():
    with TestClient(create_app(ServerSettings(max_sessions=2), load_engine=lambda settings: StubEngine())) as client:
        yield healthy(client)


def read_answer(ws, request_id: str) -> tuple[list[dict], bytes]:
    messages, audio = [], bytearray()
    while True:
        message = ws.receive()
        if message.get("bytes") is not None:
            audio += message["bytes"]
            continue
        parsed = json.loads(message["text"])
        messages.append(parsed)
        if parsed["type"] in (protocol.SYNTHESIS_COMPLETE, protocol.ERROR) and parsed["request_id"] == request_id:
            return messages, bytes(audio)


def test_ping_says_healthy_with_the_engine_provider(client):
    assert client.get("/ping").json() == {"status": "Healthy", "provider": "stub"}


def test_ping_reports_an_engine_that_failed_to_load():
    def broken(settings):
        raise FileNotFoundError("no model file")

    with TestClient(create_app(ServerSettings(), load_engine=broken)) as client:
        deadline = time.monotonic() + 10
        while (response := client.get("/ping")).json()["status"] == "Loading":
            assert time.monotonic() < deadline
        assert response.status_code == 503 and "no model file" in response.json()["error"]


def test_invocations_returns_the_audio_as_wav(client):
    response = client.post("/invocations", json={"text": "Hello there."})
    assert response.status_code == 200 and response.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(response.content)) as wav:
        assert wav.readframes(wav.getnframes()) == fake_pcm("Hello there.")


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"text": "Hi.", "voice": "nobody"}, 400, protocol.UNKNOWN_VOICE), ({"text": "..."}, 400, protocol.EMPTY_TEXT),
    ({"type": "cancel"}, 400, protocol.BAD_REQUEST), ({"text": "x" * 70_000}, 413, protocol.MESSAGE_TOO_LARGE),
])
def test_invocations_refuses_what_it_cannot_speak_with_a_code(client, body, status, code):
    response = client.post("/invocations", json=body)
    assert (response.status_code, response.json()["code"]) == (status, code)


@pytest.mark.parametrize("frame", ["text", "binary"])
def test_a_session_answers_each_request_in_order_on_either_frame_type(client, frame):
    with client.websocket_connect(protocol.BIDI_PATH) as ws:
        for request_id, text in (("a", "One."), ("b", "Two, longer.")):
            message = protocol.encode_synthesize(protocol.Synthesize(request_id=request_id, text=text))
            ws.send_text(message) if frame == "text" else ws.send_bytes(message.encode())
        first, first_audio = read_answer(ws, "a")
        second, second_audio = read_answer(ws, "b")
    assert [m["type"] for m in first] == [protocol.SYNTHESIS_START, protocol.WORDS, protocol.SYNTHESIS_COMPLETE]
    assert [protocol.Word(**word) for word in second[1]["words"]] == fake_words("Two, longer.")
    assert (first_audio, second_audio) == (fake_pcm("One."), fake_pcm("Two, longer."))
    assert second[-1]["audio_bytes"] == len(second_audio)


def test_a_session_over_the_limit_is_refused_as_overloaded(client):
    with client.websocket_connect(protocol.BIDI_PATH), client.websocket_connect(protocol.BIDI_PATH):
        with client.websocket_connect(protocol.BIDI_PATH) as third:
            refusal = json.loads(third.receive_text())
            assert refusal["code"] == protocol.OVERLOADED
            with pytest.raises(WebSocketDisconnect) as closed:
                third.receive_text()
            assert closed.value.code == 1013


def test_a_bad_message_gets_an_error_and_the_session_goes_on(client):
    with client.websocket_connect(protocol.BIDI_PATH) as ws:
        ws.send_bytes(b"\xff\xfe")
        assert json.loads(ws.receive_text())["code"] == protocol.BAD_REQUEST
        ws.send_text(json.dumps({"request_id": "ok", "text": "Still here."}))
        messages, audio = read_answer(ws, "ok")
    assert messages[-1]["type"] == protocol.SYNTHESIS_COMPLETE and audio == fake_pcm("Still here.")
