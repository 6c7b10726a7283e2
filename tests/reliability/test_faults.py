"""Faults: a TTS container that stalls, that is killed mid-answer (restarted, or not), and a caller
that reads slowly. (Callers that disconnect mid-answer, with the agent's descriptors and threads
counted, are tests/test_barge_in.py; the session-level resume is tests/test_resilience.py.)"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path

import aiohttp
import websockets

from tests.support.agents import agent_running
from tests.support.answers import raw_answer
from tts_protocol import BIDI_PATH
from voice_agent.bench.reliability import memory_mb
from voice_agent.dev import servers


async def test_a_stalled_tts_container_gives_the_caller_a_clear_error_not_a_hang(artifacts: Path):
    """The container accepts the session and never answers: the agent's per-chunk timeout ends the
    answer with a tts_failed error that says so."""
    async def stall(connection):
        await connection.wait_closed()  # reads nothing, answers nothing, until the agent gives up

    async with websockets.serve(stall, "127.0.0.1", 0) as stalled:
        port = stalled.sockets[0].getsockname()[1]
        async with agent_running(f"ws://127.0.0.1:{port}{BIDI_PATH}", replay="short",
                                 replay_speed=4.0, env={"VOICE_AGENT_TTS_TIMEOUT": "2"},
                                 log_path=str(artifacts / "agent-stalled.log")) as agent:
            started = time.monotonic()
            async with aiohttp.ClientSession() as client:
                async with client.post(f"{agent.http_url}/invocations", json={"prompt": "Go."}) as response:
                    body = await response.read()
            elapsed = time.monotonic() - started
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



async def answer_with_a_restart(agent_url: str, tts: dict, restart) -> list[dict]:
    """Ask; at the first audio, SIGKILL the TTS container (restarting it when ``restart`` is given)."""
    events, restarting = [], None
    async with aiohttp.ClientSession() as client:
        async with client.post(f"{agent_url}/invocations", json={"prompt": "Go."}) as response:
            async for line in response.content:
                if not line.startswith(b"data: "):
                    continue
                events.append(json.loads(line.removeprefix(b"data: ")))
                if events[-1]["type"] == "audio" and tts["server"].process.poll() is None and not tts.get("killed"):
                    tts["server"].process.kill()
                    tts["killed"] = True
                    if restart is not None:
                        restarting = asyncio.create_task(asyncio.to_thread(restart))
    if restarting is not None:
        await restarting
    return events


def audio_by_sentence(events: list[dict]) -> dict[int, bytes]:
    audio: dict[int, bytearray] = {}
    for event in events:
        if event["type"] == "audio":
            audio.setdefault(event["index"], bytearray()).extend(base64.b64decode(event["audio"]))
    return {index: bytes(data) for index, data in audio.items()}


async def test_a_tts_container_killed_mid_answer_every_sentence_reaches_the_caller_exactly_once(
        agent_server, artifacts: Path):
    """Through the agent: the container is SIGKILLed at the answer's first audio and restarted on the
    same port; the caller still gets every sentence once, in order, byte-identical to an answer that
    was never interrupted (Kokoro is deterministic)."""
    _, reference = await raw_answer(agent_server("long").http_url, {"prompt": "Go."})
    port = servers.free_port()
    log = str(artifacts / "tts-server-agent-restart.log")
    tts = {"server": await asyncio.to_thread(servers.start_tts_server, port, log_path=log)}

    def restart() -> None:
        tts["server"] = servers.start_tts_server(port, log_path=log)

    try:
        async with agent_running(tts["server"].ws_url, replay="long", env={"VOICE_AGENT_TTS_RECONNECTS": "6"},
                                 log_path=str(artifacts / "agent-restart.log")) as agent:
            events = await answer_with_a_restart(agent.http_url, tts, restart)
    finally:
        servers.stop(tts["server"])
    assert events[-1]["type"] == "end", events[-1]
    sentences = [e["index"] for e in events if e["type"] == "sentence"]
    assert sentences == list(range(len(sentences))) == [e["index"] for e in reference if e["type"] == "sentence"]
    got, want = audio_by_sentence(events), audio_by_sentence(reference)
    assert sorted(got) == sorted(want)
    for index in want:
        assert got[index] == want[index], f"sentence {index}: {len(got[index])} bytes, {len(want[index])} expected"
    restarts = Path(artifacts / "agent-restart.log").read_text().count("reconnecting, attempt")
    print(f"\nTTS killed at the first audio and restarted: {len(sentences)} sentences, each exactly once, "
          f"byte-identical; {restarts} reconnection attempt(s)")
    assert restarts >= 1


async def test_a_tts_container_that_stays_down_ends_the_answer_with_a_clear_error(artifacts: Path):
    port = servers.free_port()
    tts = {"server": await asyncio.to_thread(servers.start_tts_server, port,
                                             log_path=str(artifacts / "tts-server-stays-down.log"))}
    async with agent_running(tts["server"].ws_url, replay="long",
                             log_path=str(artifacts / "agent-tts-down.log")) as agent:
        started = time.monotonic()
        events = await answer_with_a_restart(agent.http_url, tts, None)
        elapsed = time.monotonic() - started
    print(f"\nTTS killed and not restarted: {events[-1]['code']} after {elapsed:.1f} s: {events[-1]['message']}")
    assert events[-1]["type"] == "error" and events[-1]["code"] == "tts_failed"
    assert "gave up after 3 reconnection attempt(s)" in events[-1]["message"]
