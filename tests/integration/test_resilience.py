"""The TTS session survives the container going away mid-answer: it reconnects, resends what was
not finished, and skips the audio already delivered, so every sentence arrives exactly once and in
order. These tests kill and restart a TTS server of their own."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect

from agent.tts_client import TTSConnectionError, TTSSession
from voice_agent.dev import servers

SENTENCES = [
    "The first sentence is spoken before anything goes wrong.",
    "The second one is on its way when the container disappears.",
    "A third waits in the queue.",
    "The fourth follows it.",
    "And the fifth closes the answer.",
]


@pytest.fixture
def own_tts_server(artifacts):
    port = servers.free_port()
    log = str(artifacts / "tts-server-resilience.log")
    holder = {"server": servers.start_tts_server(port, log_path=log, extra_args=["--idle-timeout", "2"])}

    def restart() -> servers.Server:
        holder["server"] = servers.start_tts_server(port, log_path=log, extra_args=["--idle-timeout", "2"])
        return holder["server"]

    yield holder, restart
    servers.stop(holder["server"])


async def reference_audio(tts_server) -> list[bytes]:
    async with TTSSession(tts_server.ws_url) as tts:
        streams = [await tts.synthesize(text) for text in SENTENCES]
        return [b"".join([chunk async for chunk in stream]) for stream in streams]


async def test_a_killed_container_mid_answer_loses_no_sentence_and_repeats_none(tts_server, own_tts_server):
    holder, restart = own_tts_server
    expected = await reference_audio(tts_server)
    received: list[bytes] = []
    async with TTSSession(holder["server"].ws_url, max_reconnects=6, reconnect_backoff=0.5) as tts:
        streams = [await tts.synthesize(text) for text in SENTENCES]
        restarted = None
        for index, stream in enumerate(streams):
            audio = bytearray()
            async for chunk in stream:
                audio += chunk
                if index == 1 and restarted is None:
                    holder["server"].process.kill()  # mid-sentence: part of its audio is delivered
                    restarted = asyncio.create_task(asyncio.to_thread(restart))
            received.append(bytes(audio))
        await restarted
    assert len(received) == len(SENTENCES)
    assert tts.reconnects >= 1
    assert streams[1].attempts >= 2, "the interrupted sentence was sent again"
    for index, (got, want) in enumerate(zip(received, expected, strict=True)):
        assert got == want, f"sentence {index}: {len(got)} bytes received, {len(want)} expected"


async def test_the_session_gives_up_after_the_bounded_reconnections_with_a_clear_error(own_tts_server):
    holder, _ = own_tts_server
    async with TTSSession(holder["server"].ws_url, max_reconnects=2, reconnect_backoff=0.1) as tts:
        stream = await tts.synthesize(SENTENCES[0])
        holder["server"].process.kill()
        with pytest.raises(TTSConnectionError, match="gave up after 2 reconnection attempt"):
            [chunk async for chunk in stream]
        with pytest.raises(TTSConnectionError):
            await tts.synthesize("Too late.")


async def test_an_idle_session_is_closed_by_the_server(own_tts_server):
    holder, _ = own_tts_server
    async with connect(holder["server"].ws_url) as ws:
        await asyncio.wait_for(ws.wait_closed(), 10)
    assert (ws.close_code, ws.close_reason) == (1000, "idle timeout")
