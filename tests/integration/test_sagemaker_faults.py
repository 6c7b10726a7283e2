"""The SageMaker leg's own faults, through the local stand-in and the real SDK client: throttling
when a session opens (bounded retries with backoff, then a clear error), and an HTTP/2 stream reset
or the connection closed by the server mid-answer (the session resumes as it does over a WebSocket:
every sentence once, in order, byte-identical to an undisturbed answer)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agent.tts_client import TTSError, TTSSession
from tests.support.sagemaker import connector
from voice_agent.dev import servers

SENTENCES = ["The first sentence is spoken before anything goes wrong.",
             "The second one is on its way when the stream breaks.",
             "A third waits in the queue.", "And the fourth closes the answer."]


def stand_in(tts_server, artifacts: Path, name: str, faults: list[str], port: int | None = None) -> servers.Server:
    log = artifacts / f"sagemaker-local-{name}.log"
    log.unlink(missing_ok=True)
    return servers.start_sagemaker_local(tts_server.ws_url, str(artifacts / "sagemaker-tls-faults"), port,
                                         log_path=str(log), faults=faults)


async def spoken(target, **options) -> tuple[list[bytes], TTSSession]:
    """Each sentence's audio, synthesized over one session to ``target`` (pipelined)."""
    async with TTSSession(target, **options) as session:
        streams = [await session.synthesize(text) for text in SENTENCES]
        audio = [b"".join([chunk async for chunk in stream]) for stream in streams]
    return audio, session


async def test_throttled_opens_are_retried_with_backoff_until_the_stream_opens(tts_server, artifacts):
    server = await asyncio.to_thread(stand_in, tts_server, artifacts, "throttled", ["--throttle-first", "2"])
    with servers.running(server):
        started = time.perf_counter()
        transport = await connector(server.https_url, artifacts / "sagemaker-tls-faults" / "ca.pem",
                                    open_attempts=4, open_backoff=0.2)()
        elapsed = time.perf_counter() - started
        await transport.close()
    assert Path(server.log_path).read_text().count("throttled") == 2
    assert elapsed >= 0.2 + 0.4, "each retry waited its backoff (0.2 s, then twice that)"


async def test_throttling_that_outlasts_the_attempts_ends_in_a_clear_error(tts_server, artifacts):
    server = await asyncio.to_thread(stand_in, tts_server, artifacts, "throttled-long", ["--throttle-first", "100"])
    with servers.running(server), pytest.raises(TTSError, match="Throttling") as raised:
        await connector(server.https_url, artifacts / "sagemaker-tls-faults" / "ca.pem", open_attempts=3,
                        open_backoff=0.05)()
    assert "3 attempt" in str(raised.value) or Path(server.log_path).read_text().count("throttled") == 3


async def test_a_stream_reset_mid_answer_resumes_with_every_sentence_once_and_byte_identical(tts_server, artifacts):
    expected, _ = await spoken(tts_server.ws_url)
    server = await asyncio.to_thread(stand_in, tts_server, artifacts, "reset", ["--reset-after-parts", "6"])
    with servers.running(server):
        target = connector(server.https_url, artifacts / "sagemaker-tls-faults" / "ca.pem")
        received, session = await spoken(target, max_reconnects=3, reconnect_backoff=0.1)
    assert "resetting the first stream" in Path(server.log_path).read_text()
    assert session.reconnects >= 1
    assert [len(audio) for audio in received] == [len(audio) for audio in expected]
    assert received == expected


async def test_the_connection_closed_by_the_server_mid_answer_resumes_once_it_is_back(tts_server, artifacts):
    expected, _ = await spoken(tts_server.ws_url)
    port = servers.free_port()
    first = await asyncio.to_thread(stand_in, tts_server, artifacts, "gone", ["--exit-after-parts", "6"], port)
    holder = {"server": first}

    async def back_when_gone() -> None:
        while not first.died():
            await asyncio.sleep(0.05)
        holder["server"] = await asyncio.to_thread(stand_in, tts_server, artifacts, "back", [], port)

    back = asyncio.create_task(back_when_gone())
    try:
        target = connector(f"https://127.0.0.1:{port}", artifacts / "sagemaker-tls-faults" / "ca.pem")
        received, session = await spoken(target, max_reconnects=8, reconnect_backoff=0.5)
        await back
    finally:
        back.cancel()
        for server in (first, holder["server"]):
            servers.stop(server)
    assert first.process.returncode == 3, "the stand-in exited mid-answer, as asked"
    assert session.reconnects >= 1
    assert received == expected
