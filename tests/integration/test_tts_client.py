"""The agent's TTS session client against the real TTS server."""

from __future__ import annotations

import pytest
from websockets.asyncio.server import serve

from agent.tts_client import TTSConnectionError, TTSError, TTSSession, TTSTimeoutError
from tests.support.audio import assert_speech_like
from tests.support.streams import outcomes
from tts_protocol import BIDI_PATH
from voice_agent.dev.servers import free_port


async def test_pipelined_requests_stream_back_in_order_on_one_session(tts_server):
    texts = ["First, a short one.", "Second, a somewhat longer sentence to synthesize.", "Third."]
    async with TTSSession(tts_server.ws_url) as tts:
        streams = [await tts.synthesize(text) for text in texts]  # all sent before any audio is read
        audio = []
        for stream in streams:
            audio.append(b"".join([chunk async for chunk in stream]))
    for text, pcm, stream in zip(texts, audio, streams, strict=True):
        assert stream.stats["audio_bytes"] == len(pcm)
        assert_speech_like(pcm, text)


async def test_a_refused_request_raises_and_the_session_goes_on(tts_server):
    async with TTSSession(tts_server.ws_url) as tts:
        bad = await tts.synthesize("Hello.", voice="nobody")
        good = await tts.synthesize("Hello again.")
        with pytest.raises(TTSError) as raised:
            [chunk async for chunk in bad]
        assert raised.value.code == "unknown_voice"
        assert b"".join([chunk async for chunk in good])


async def test_cancel_ends_every_pending_stream(tts_server):
    async with TTSSession(tts_server.ws_url) as tts:
        streams = [await tts.synthesize("A sentence that takes the model a moment to speak.") for _ in range(3)]
        await tts.cancel()
        codes = await outcomes(streams)
    assert codes[1:] == ["cancelled", "cancelled"]
    assert codes[0] in ("complete", "cancelled")


async def test_connecting_to_nothing_fails_fast_with_a_clear_error():
    with pytest.raises(TTSConnectionError, match="cannot open a TTS session"):
        async with TTSSession(f"ws://127.0.0.1:{free_port()}{BIDI_PATH}", open_timeout=2):
            pass


async def test_a_stream_times_out_when_the_server_accepts_but_never_answers():
    async def ignore(connection):
        async for _ in connection:
            pass

    async with serve(ignore, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with TTSSession(f"ws://127.0.0.1:{port}/x", chunk_timeout=0.5, close_timeout=1) as tts:
            stream = await tts.synthesize("Anyone there?")
            with pytest.raises(TTSTimeoutError, match="no audio"):
                [chunk async for chunk in stream]
