"""Load: the agent under concurrent callers. (The TTS server under 1 to 16 concurrent sessions is
asserted on the reliability benchmark's run, tests/integration/test_bench.py, which drives the
same load levels.)"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time

import websockets

from tests.support.agents import agent_running
from tests.support.answers import raw_answer
from voice_agent.bench.reliability import MAX_SESSIONS


async def test_concurrent_callers_each_get_their_own_answer(agent_server):
    """Four callers at once, each at its own speaking rate: each one's audio is byte-identical to the
    same request made alone (Kokoro is deterministic), so no audio crossed between answers."""
    url = agent_server("short").http_url
    speeds = [0.8, 1.0, 1.25, 1.5]

    async def audio(speed: float) -> tuple[bytes, list[str]]:
        _, events = await raw_answer(url, {"prompt": "Go.", "speed": speed})
        assert events[-1]["type"] == "end"
        pcm = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "audio")
        return pcm, [e["text"] for e in events if e["type"] == "sentence"]

    alone = [await audio(speed) for speed in speeds]
    together = await asyncio.gather(*(audio(speed) for speed in speeds))
    lengths = {len(pcm) for pcm, _ in alone}
    assert len(lengths) == len(speeds), "different rates give different audio, so crossing would show"
    for speed, (pcm, sentences), (pcm_alone, sentences_alone) in zip(speeds, together, alone, strict=True):
        assert sentences == sentences_alone
        assert pcm == pcm_alone, f"the answer at speed {speed} differs from the same answer alone"
    print(f"\n{len(speeds)} concurrent answers, each identical to its solo run")



async def test_an_overloaded_tts_server_gives_the_caller_a_clear_error(limited_tts, artifacts):
    """Every session slot taken: the agent's answer ends with tts_failed naming the overload, at
    once (a refusal is not retried as if the connection had dropped)."""
    async with agent_running(limited_tts.ws_url, replay="short", replay_speed=4.0,
                             log_path=str(artifacts / "agent-overloaded.log")) as agent:
        async with contextlib.AsyncExitStack() as held:
            for _ in range(MAX_SESSIONS):
                await held.enter_async_context(websockets.connect(limited_tts.ws_url))
            started = time.monotonic()
            _, events = await raw_answer(agent.http_url, {"prompt": "Go."})
            elapsed = time.monotonic() - started
    print(f"\noverloaded TTS: {events[-1]['code']} after {elapsed:.1f} s: {events[-1]['message']}")
    assert events[-1]["type"] == "error" and events[-1]["code"] == "tts_failed"
    assert "overloaded" in events[-1]["message"]
    assert elapsed < 10
