"""Faults: a TTS container that stalls, and a caller that reads slowly. (A TTS container killed and
restarted mid-answer is tests/test_resilience.py; callers that disconnect mid-answer, with the
agent's descriptors and threads counted, are tests/test_barge_in.py.)"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path

import aiohttp
import websockets

from voice_agent import servers
from voice_agent.bench.reliability import memory_mb


async def test_a_stalled_tts_container_gives_the_caller_a_clear_error_not_a_hang(artifacts: Path):
    """The container accepts the session and never answers: the agent's per-chunk timeout ends the
    answer with a tts_failed error that says so."""
    async def stall(connection):
        await connection.wait_closed()  # reads nothing, answers nothing, until the agent gives up

    async with websockets.serve(stall, "127.0.0.1", 0) as stalled:
        port = stalled.sockets[0].getsockname()[1]
        agent = await asyncio.to_thread(
            servers.start_agent_server, f"ws://127.0.0.1:{port}/invocations-bidirectional-stream", replay="short",
            replay_speed=4.0, env={"VOICE_AGENT_TTS_TIMEOUT": "2"}, log_path=str(artifacts / "agent-stalled.log"))
        try:
            started = time.monotonic()
            async with aiohttp.ClientSession() as client:
                async with client.post(f"{agent.http_url}/invocations", json={"prompt": "Go."}) as response:
                    body = await response.read()
            elapsed = time.monotonic() - started
        finally:
            servers.stop(agent)
    last = json.loads(body.decode().strip().split("\n\n")[-1].removeprefix("data: "))
    print(f"\nstalled TTS: the caller got {last['code']} after {elapsed:.1f} s: {last['message']}")
    assert last["type"] == "error" and last["code"] == "tts_failed"
    assert "within 2" in last["message"]
    assert elapsed < 10, "the caller waited far longer than the timeout"


async def test_a_slow_caller_gets_every_byte_and_the_agent_stays_bounded(agent_server):
    """The caller reads at 64 KB/s, slower than the agent produces: nothing is dropped, the answer
    completes, and the agent's memory does not grow with what the caller has not read yet."""
    agent = agent_server("long")
    rss_before = memory_mb(agent.process.pid, "VmRSS")
    received = bytearray()
    async with aiohttp.ClientSession() as client:
        async with client.post(f"{agent.http_url}/invocations", json={"prompt": "Go."}) as response:
            while chunk := await response.content.read(4096):
                received += chunk
                await asyncio.sleep(0.06)
    events = [json.loads(block.removeprefix("data: ")) for block in received.decode().split("\n\n") if block]
    audio = sum(len(base64.b64decode(e["audio"])) for e in events if e["type"] == "audio")
    end = events[-1]
    growth = memory_mb(agent.process.pid, "VmRSS") - rss_before
    print(f"\nslow caller: {len(received):,} bytes read at 64 KB/s, {audio:,} bytes of audio, agent RSS "
          f"grew {growth:.1f} MB")
    assert end["type"] == "end" and audio == end["metrics"]["audio_bytes"] > 0
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert growth < 100

