"""The agent's routes through Starlette's test client, in process: the real BedrockAgentCoreApp,
legs, pipeline and Strands loop (replaying a recording fast), with the in-memory TTS."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from agent.config import AgentSettings
from agent.entrypoint import create_app
from caller_protocol import SESSION_HEADER, WS_PATH, VoiceRequest, encode_ask, encode_cancel
from tests.support.answers import expected_sentences, parse_sse
from tests.support.fake_tts import FakeTTS


@pytest.fixture
def client():
    settings = AgentSettings(model="replay", replay="short", replay_speed=1000)
    with TestClient(create_app(settings, tts=FakeTTS().connect)) as client:
        yield client


def ws_answer(ws) -> list[dict]:
    """Events until the answer's last; an audio event gets its binary frame as ``data``."""
    received = []
    while True:
        event = json.loads(ws.receive_text())
        if event["type"] == "audio":
            event["data"] = ws.receive_bytes()
            assert len(event["data"]) == event["bytes"]
        received.append(event)
        if event["type"] in ("end", "error"):
            return received


def test_invocations_streams_the_answer_as_server_sent_events(client):
    response = client.post("/invocations", json={"prompt": "Hi?"}, headers={SESSION_HEADER: "s-" + "1" * 40})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.content)
    assert [e["text"] for e in events if e["type"] == "sentence"] == expected_sentences("short")
    assert events[0]["session_id"] == "s-" + "1" * 40 and events[-1]["type"] == "end"


def test_a_refused_request_is_one_error_event(client):
    events = parse_sse(client.post("/invocations", json={"prompt": ""}).content)
    assert [(e["type"], e["code"]) for e in events] == [("error", "invalid_request")]


@pytest.mark.parametrize("session_id", ["x" * 257, "has space", "-leading-dash", "new\nline", "semi;colon"])
def test_a_session_id_that_is_not_one_is_refused_on_both_legs_without_being_echoed(client, session_id):
    events = parse_sse(client.post("/invocations", json={"prompt": "Hi?"}, headers={SESSION_HEADER: session_id})
                       .content)
    assert [(e["type"], e["code"]) for e in events] == [("error", "invalid_request")]
    assert SESSION_HEADER in events[0]["message"] and session_id not in events[0]["message"]
    with client.websocket_connect(WS_PATH, headers={SESSION_HEADER: session_id}) as ws:
        refused = json.loads(ws.receive_text())
        assert (refused["type"], refused["code"], refused["seq"]) == ("error", "invalid_request", None)
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
    assert closed.value.code == 1008


def test_a_body_over_the_limit_is_413_before_it_is_read(client):
    assert client.post("/invocations", content=b"{" + b" " * 70_000 + b"}").status_code == 413


def test_a_payload_nested_too_deep_is_a_400(client):
    assert client.post("/invocations", content=b"[" * 20_000 + b"]" * 20_000).status_code == 400


def test_ws_answers_with_binary_audio_and_a_cancel_ends_the_next_answer(client):
    with client.websocket_connect(WS_PATH) as ws:
        ws.send_text(encode_ask(VoiceRequest("Hi?")))
        first = ws_answer(ws)
        assert first[-1]["type"] == "end" and any(e["type"] == "audio" for e in first)
        assert all("audio" not in e for e in first), "no Base64 on the binary leg"
        ws.send_text(json.dumps({"type": "dance"}))
        refused = json.loads(ws.receive_text())
        assert (refused["type"], refused["seq"], refused["code"]) == ("error", None, "invalid_request")
        ws.send_text(encode_cancel())  # idle: nothing happens
        ws.send_text(encode_ask(VoiceRequest("Again?")))
        second = ws_answer(ws)
        assert second[0]["turn"] == 2, "the asks of one connection continue one conversation"


def test_the_page_is_served_at_the_root(client):
    response = client.get("/")
    assert response.status_code == 200 and "<!doctype html>" in response.text.lower()


def test_diagnostics_are_served_only_when_asked_for(client):
    assert client.get("/diagnostics").status_code == 404
    settings = AgentSettings(model="replay", replay="short", replay_speed=1000, diagnostics=True)
    with TestClient(create_app(settings, tts=FakeTTS().connect)) as diagnosed:
        diagnosed.post("/invocations", json={"prompt": "Hi?"}, headers={SESSION_HEADER: "s-diagnosed"})
        state = diagnosed.get("/diagnostics").json()
    assert state["answers"] == 0 and state["conversations"] == 1
    assert state["tasks"] >= 1 and state["open_fds"] > 0 and state["rss_mb"] > 0
