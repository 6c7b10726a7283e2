"""Leg 3 through SageMaker's bidirectional streaming API: the real SDK client (HTTP/2 over the AWS
CRT), unmodified, against the local stand-in that speaks the service's event-stream protocol and
forwards every client message to the container as a binary WebSocket frame, as SageMaker does."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest
from websockets.asyncio.server import serve

from agent.tts_client import TTSError, TTSSession
from tests.support.answers import expected_sentences, raw_answer
from tests.support.audio import assert_speech_like
from tests.support.sagemaker import FAKE_CREDENTIALS, buggy_endpoint, connector
from tests.support.streams import outcomes
from tts_protocol import BIDI_PATH
from voice_agent.dev import servers


async def test_pipelined_requests_through_sagemaker_come_back_in_order(sagemaker_stand_in):
    server, ca = sagemaker_stand_in
    texts = ["Through the managed API.", "Every part arrives as a binary frame.", "And in order."]
    async with TTSSession(connector(server.https_url, ca)) as tts:
        streams = [await tts.synthesize(text) for text in texts]
        audio = [b"".join([chunk async for chunk in stream]) for stream in streams]
    for text, pcm, stream in zip(texts, audio, streams, strict=True):
        assert stream.stats["audio_bytes"] == len(pcm)
        assert_speech_like(pcm, text)


async def test_cancel_through_sagemaker_ends_the_queued_requests(sagemaker_stand_in):
    server, ca = sagemaker_stand_in
    async with TTSSession(connector(server.https_url, ca)) as tts:
        streams = [await tts.synthesize("A sentence that keeps the model busy for a little while.") for _ in range(3)]
        await tts.cancel()
        codes = await outcomes(streams)
    assert codes[1:] == ["cancelled", "cancelled"]


async def test_a_container_reading_only_text_frames_fails_through_sagemaker_while_ping_stays_healthy(artifacts):
    async with buggy_endpoint(artifacts, "buggy") as (stand_in, ca, port):
        async with TTSSession(connector(stand_in.https_url, ca), max_reconnects=0, chunk_timeout=10) as tts:
            stream = await tts.synthesize("Hello.")
            with pytest.raises(TTSError) as raised:
                [chunk async for chunk in stream]
        assert raised.value.code == "connection_failed"
        assert "ModelStreamError" in raised.value.message
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/ping") as ping:
            assert ping.status == 200


async def test_opening_retries_while_the_container_refuses_then_succeeds(artifacts):
    port = servers.free_port()
    stand_in = await asyncio.to_thread(
        servers.start_sagemaker_local, f"ws://127.0.0.1:{port}{BIDI_PATH}",
        str(artifacts / "sagemaker-tls-late"), log_path=str(artifacts / "sagemaker-local-late.log"))
    delay = 1.0

    async def container_comes_up_late():
        await asyncio.sleep(delay)
        return await serve(lambda connection: connection.wait_closed(), "127.0.0.1", port)

    try:
        started = time.perf_counter()
        late = asyncio.create_task(container_comes_up_late())
        transport = await connector(stand_in.https_url, artifacts / "sagemaker-tls-late" / "ca.pem",
                                    open_attempts=6, open_backoff=0.2)()
        elapsed = time.perf_counter() - started
        await transport.close()
        (await late).close()
        # The first tries got HTTP 424 ModelError (nothing listening); a later one got through.
        assert elapsed >= delay
    finally:
        servers.stop(stand_in)


async def test_opening_gives_up_after_the_bounded_attempts_with_a_clear_error(sagemaker_stand_in, artifacts):
    server, ca = sagemaker_stand_in
    nowhere = connector(f"https://127.0.0.1:{servers.free_port()}", ca, open_attempts=2, open_backoff=0.05,
                        open_timeout=3)
    with pytest.raises(TTSError, match="cannot open a bidirectional stream"):
        await nowhere()


async def test_the_agent_speaks_every_sentence_through_sagemaker(tts_server, sagemaker_stand_in, artifacts):
    server, ca = sagemaker_stand_in
    env = {**FAKE_CREDENTIALS, "SAGEMAKER_ENDPOINT_NAME": "kokoro-tts", "SAGEMAKER_REGION": "us-east-1",
           "SAGEMAKER_ENDPOINT_URL": server.https_url, "SAGEMAKER_CA_BUNDLE": str(ca)}
    agent = await asyncio.to_thread(servers.start_agent_server, "ws://127.0.0.1:9/unused", replay="markdown",
                                    replay_speed=2.0, log_path=str(artifacts / "agent-sagemaker.log"), env=env)
    try:
        _, events = await raw_answer(agent.http_url, {"prompt": "Compare them."})
    finally:
        servers.stop(agent)
    assert events[-1]["type"] == "end", events[-1]
    sentences = [event for event in events if event["type"] == "sentence"]
    assert [event["text"] for event in sentences] == expected_sentences("markdown")
    audio_indices = [event["index"] for event in events if event["type"] == "audio"]
    assert audio_indices == sorted(audio_indices)
    assert set(audio_indices) == {event["index"] for event in sentences if event["speech"]}
