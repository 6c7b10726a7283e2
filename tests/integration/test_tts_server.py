"""The TTS container app, through its real interface: a uvicorn server on loopback, the real model."""

from __future__ import annotations

import asyncio
import io
import json
import wave

import aiohttp
import pytest
from websockets.asyncio.client import connect

import tts_protocol as protocol
from tests.support.audio import assert_speech_like
from tts_protocol.client import Completed, Failed, Started
from voice_agent.dev.raw_tts import read_answers

SENTENCE = "The quick brown fox jumps over the lazy dog."


async def collect(ws, request_ids: list[str]) -> dict[str, dict]:
    """Read until every request has its final reply; each request's events and audio, and (as
    ``_order``) the order in which requests started."""
    outcomes, order = await read_answers(ws, request_ids)
    results: dict = {rid: {"audio": outcome.audio, "messages": outcome.events} for rid, outcome in outcomes.items()}
    results["_order"] = order
    return results


def synthesize(request_id: str, text: str, **fields) -> str:
    return protocol.encode_synthesize(protocol.Synthesize(request_id=request_id, text=text, **fields))


async def test_ping_is_healthy_once_the_model_is_loaded(tts_server):
    async with aiohttp.ClientSession() as session, session.get(f"{tts_server.http_url}/ping") as response:
        assert response.status == 200
        assert (await response.json())["status"] == "Healthy"


async def test_invocations_returns_a_wav_of_the_text(tts_server):
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{tts_server.http_url}/invocations", json={"text": SENTENCE}) as response:
            assert response.status == 200
            assert response.content_type == "audio/wav"
            body = await response.read()
    with wave.open(io.BytesIO(body)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24_000, 1, 2)
        pcm = wav.readframes(wav.getnframes())
    assert_speech_like(pcm, SENTENCE)


async def test_invocations_rejects_an_unknown_voice_with_a_clear_error(tts_server):
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{tts_server.http_url}/invocations",
                                json={"text": SENTENCE, "voice": "nobody"}) as response:
            assert response.status == 400
            body = await response.json()
    assert body["code"] == protocol.UNKNOWN_VOICE
    assert "jf_alpha" in body["message"]


@pytest.mark.parametrize("frame", ["text", "binary"])
async def test_a_request_gets_start_audio_and_complete(tts_server, frame):
    message = synthesize("r1", SENTENCE)
    async with connect(tts_server.ws_url) as ws:
        await ws.send(message if frame == "text" else message.encode("utf-8"))
        result = (await collect(ws, ["r1"]))["r1"]
    start, complete = result["messages"]
    assert isinstance(start, Started)
    assert (start.sample_rate, start.format) == (24_000, "pcm16")
    assert isinstance(complete, Completed)
    assert complete.stats["audio_bytes"] == len(result["audio"])
    assert_speech_like(bytes(result["audio"]), SENTENCE)


async def test_a_message_with_text_and_no_type_means_synthesize(tts_server):
    async with connect(tts_server.ws_url) as ws:
        await ws.send(json.dumps({"request_id": "plain", "text": "Hello there."}).encode())
        result = (await collect(ws, ["plain"]))["plain"]
    assert isinstance(result["messages"][-1], Completed)
    assert len(result["audio"]) > 0


@pytest.mark.parametrize("bad", [
    b"\xff\xfe not utf-8",
    b"not json at all",
    b"[1, 2, 3]",
    json.dumps({"type": "shout", "text": "hi"}).encode(),
    json.dumps({"type": "synthesize"}).encode(),
])
async def test_a_malformed_message_gets_an_error_and_the_session_keeps_working(tts_server, bad):
    async with connect(tts_server.ws_url) as ws:
        await ws.send(bad)
        error = protocol.parse_server_message(await ws.recv())
        assert isinstance(error, protocol.Error)
        assert error.code in (protocol.BAD_REQUEST, protocol.UNKNOWN_TYPE)
        assert error.message
        await ws.send(synthesize("after", "Still working."))
        result = (await collect(ws, ["after"]))["after"]
    assert isinstance(result["messages"][-1], Completed)
    assert_speech_like(bytes(result["audio"]), "Still working.")


async def test_request_errors_name_their_request_and_keep_the_order(tts_server):
    async with connect(tts_server.ws_url) as ws:
        await ws.send(synthesize("good-1", "First sentence."))
        await ws.send(synthesize("bad-voice", "Second sentence.", voice="nobody"))
        await ws.send(json.dumps({"type": "synthesize", "request_id": "bad-speed", "text": "x", "speed": 9}))
        await ws.send(synthesize("good-2", "Third sentence."))
        results = await collect(ws, ["good-1", "bad-voice", "bad-speed", "good-2"])
    assert results["bad-voice"]["messages"][-1].code == protocol.UNKNOWN_VOICE
    assert results["bad-speed"]["messages"][-1].code == protocol.BAD_SPEED
    assert results["_order"] == ["good-1", "good-2"]
    for rid in ("good-1", "good-2"):
        assert isinstance(results[rid]["messages"][-1], Completed)


async def test_pipelined_requests_are_answered_in_order_with_complete_audio(tts_server):
    texts = {f"p{i}": text for i, text in enumerate(
        ["One small step.", "A second, slightly longer sentence follows it.", "Then a third.", "And done."])}
    async with connect(tts_server.ws_url) as ws:
        for rid, text in texts.items():
            await ws.send(synthesize(rid, text))
        results = await collect(ws, list(texts))
    assert results["_order"] == list(texts)
    for rid, text in texts.items():
        complete = results[rid]["messages"][-1]
        assert isinstance(complete, Completed)
        assert complete.stats["audio_bytes"] == len(results[rid]["audio"])
        assert_speech_like(bytes(results[rid]["audio"]), text)


async def test_cancel_drops_queued_requests_with_a_cancelled_error(tts_server):
    async with connect(tts_server.ws_url) as ws:
        for i in range(4):
            await ws.send(synthesize(f"c{i}", "This sentence is long enough to keep the model busy for a while."))
        await ws.send(protocol.encode_cancel())
        results = await collect(ws, [f"c{i}" for i in range(4)])
        cancelled = [rid for rid in (f"c{i}" for i in range(4))
                     if isinstance(results[rid]["messages"][-1], Failed)]
        assert all(results[rid]["messages"][-1].code == protocol.CANCELLED for rid in cancelled)
        assert {"c1", "c2", "c3"} <= set(cancelled), "queued requests must be dropped"
        await ws.send(synthesize("next", "Back again."))
        after = (await collect(ws, ["next"]))["next"]
    assert isinstance(after["messages"][-1], Completed)


async def test_close_finishes_queued_requests_then_closes(tts_server):
    async with connect(tts_server.ws_url) as ws:
        await ws.send(synthesize("last", "Finish me first."))
        await ws.send(protocol.encode_close())
        result = (await collect(ws, ["last"]))["last"]
        await ws.wait_closed()
    assert isinstance(result["messages"][-1], Completed)
    assert ws.close_code == 1000


async def test_text_with_nothing_to_speak_gets_an_error(tts_server):
    async with connect(tts_server.ws_url) as ws:
        await ws.send(synthesize("empty", "... --- ..."))
        result = (await collect(ws, ["empty"]))["empty"]
    assert result["messages"][-1].code == protocol.EMPTY_TEXT
    assert not result["audio"]


async def test_an_oversize_message_gets_an_error_and_the_session_keeps_working(tts_server):
    async with connect(tts_server.ws_url, max_size=None) as ws:
        await ws.send(json.dumps({"request_id": "big", "text": "word " * 20_000}).encode())
        error = protocol.parse_server_message(await ws.recv())
        assert isinstance(error, protocol.Error) and error.code == protocol.MESSAGE_TOO_LARGE
        await ws.send(synthesize("after-big", "Fine again."))
        result = (await collect(ws, ["after-big"]))["after-big"]
    assert isinstance(result["messages"][-1], Completed)


async def test_a_frame_beyond_the_frame_limit_closes_only_that_connection(tts_server):
    from tts_server.settings import MAX_FRAME_BYTES

    async with connect(tts_server.ws_url) as ws:
        await ws.send(b"x" * (MAX_FRAME_BYTES + 1))
        await ws.wait_closed()
    assert ws.close_code == 1009  # "message too big"
    async with connect(tts_server.ws_url) as ws:
        await ws.send(synthesize("next-session", "Still serving."))
        result = (await collect(ws, ["next-session"]))["next-session"]
    assert isinstance(result["messages"][-1], Completed)



async def test_websocket_pings_are_answered(tts_server):
    async with connect(tts_server.ws_url, ping_interval=None) as ws:
        latency = await asyncio.wait_for(await ws.ping(), 5)
    assert latency >= 0


async def test_a_requests_words_come_before_the_audio_that_speaks_them(tts_server):
    async with connect(tts_server.ws_url) as ws:
        await ws.send(synthesize("w", SENTENCE))
        kinds, words = [], []
        while not kinds or kinds[-1] != "complete":
            message = protocol.parse_server_message(await asyncio.wait_for(ws.recv(), 60))
            kind = {bytes: "audio", protocol.Words: "words", protocol.SynthesisStart: "start",
                    protocol.SynthesisComplete: "complete"}[type(message)]
            kinds.append(kind)
            if isinstance(message, protocol.Words):
                words += message.words
    assert kinds[:3] == ["start", "words", "audio"] and set(kinds[3:-1]) == {"audio"}
    assert [word.word for word in words] == SENTENCE.split()
    assert all(0 < word.start_ms < word.end_ms for word in words)
