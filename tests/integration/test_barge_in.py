"""Barge-in and cleanup: a cancel or a caller that goes away stops the model stream and the TTS
session, drops what is queued, leaves the conversation as the caller heard it, and leaks nothing.

The pipeline runs in-process against the real TTS server (tasks and connections are countable
here); the agent server runs as a subprocess for the HTTP and /ws legs (its file descriptors and
threads are counted through /proc). Stop times are printed as figures, not asserted tightly."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import aiohttp
import pytest
import websockets

from agent.conversation import INTERRUPTED
from agent.llm.replay import ReplayModel, load_recording
from agent.pipeline import BargeIn, VoicePipeline
from caller_protocol import VoiceRequest, events
from tests.support.answers import EVENT_SCHEMA, heard_by
from voice_agent.caller import Options, ask


def pipeline(tts_url: str) -> VoicePipeline:
    return VoicePipeline(lambda: ReplayModel(load_recording("long")), tts_url, system_prompt="Be brief.")


async def answer_until(gen, stop_when) -> list[dict]:
    seen = []
    async for event in gen:
        seen.append(event)
        if stop_when(seen):
            break
    return seen


async def test_cancel_stops_the_answer_and_the_conversation_keeps_what_was_said(tts_server):
    voice = pipeline(tts_server.ws_url)
    cancel = asyncio.Event()
    tasks_before = len(asyncio.all_tasks())
    seen, after_cancel = [], []
    async for event in voice.answer(VoiceRequest("Why is streaming faster?"), "s-cancel", cancel):
        (after_cancel if cancel.is_set() else seen).append(event)
        if event["type"] == "audio" and not cancel.is_set():
            cancel.set()
    assert [event["type"] for event in after_cancel] == ["end"], "nothing but the end follows a cancel"
    end = after_cancel[0]
    assert end["metrics"]["cancelled"] is True
    assert end["metrics"]["stop_ms"] is not None and end["metrics"]["stop_ms"] < 5_000
    print(f"\ncancel -> model and TTS stopped in {end['metrics']['stop_ms']} ms")
    full = load_recording("long").text
    assert len(asyncio.all_tasks()) == tasks_before, "a pipeline task outlived the answer"

    async with voice.conversations.turn("s-cancel") as (agent, turn):
        roles = [m["role"] for m in agent.messages]
        said = agent.messages[-1]["content"][0]["text"]
    assert turn == 2 and roles == ["user", "assistant"]
    assert said and full.startswith(said.split(" ")[0]) and len(said) < len(full)

    # The next turn of the session is a normal, complete answer.
    again = [e async for e in voice.answer(VoiceRequest("And then?"), "s-cancel")]
    assert again[-1]["type"] == "end" and again[-1]["metrics"]["cancelled"] is False
    async with voice.conversations.turn("s-cancel") as (agent, _):
        assert [m["role"] for m in agent.messages] == ["user", "assistant"] * 2


def playback_position(events: list[dict], where: str) -> float:
    """A named point of the answer's playback, from its events so far (pcm16: 48 bytes a millisecond)."""
    first_chunk_ms = sum(len(e["audio"]) for e in events if e["type"] == "audio" and e["index"] == 0) / 48
    second = next(e for e in events if e["type"] == "words" and e["index"] == 1)["words"]
    return {"before any audio": 0.0, "between sentences": first_chunk_ms,
            "mid-word": (second[1]["start_ms"] + second[1]["end_ms"]) / 2 + 5}[where]


@pytest.mark.parametrize("where", ["mid-word", "between sentences", "before any audio"])
async def test_a_barge_in_at_a_playback_position_keeps_the_words_heard_by_then(tts_server, where):
    """The real TTS server times the words; the listener says where its playback stopped."""
    voice = pipeline(tts_server.ws_url)
    cancel = BargeIn()
    events: list[dict] = []
    async for event in voice.answer(VoiceRequest("Why is streaming faster?"), f"s-{where}", cancel):
        events.append(event)
        if event["type"] == "audio" and event["index"] == 1 and not cancel.is_set():
            # The second chunk's audio has reached past its third word: a listener may be anywhere before.
            received_ms = sum(len(e["audio"]) for e in events if e["type"] == "audio") / 48
            third = next(e for e in events if e["type"] == "words" and e["index"] == 1)["words"][2]
            if received_ms > third["end_ms"]:
                cancel.interrupt(played := playback_position(events, where))
    assert events[-1]["type"] == "end" and events[-1]["metrics"]["cancelled"]
    async with voice.conversations.turn(f"s-{where}") as (agent, _):
        messages = agent.messages
    heard = heard_by(events, played)
    print(f"\n{where} ({played:.0f} ms): {heard!r}")
    if where == "before any audio":
        assert messages == [], "nothing was heard: no trace of the turn"
        return
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[-1]["content"][0]["text"] == f"{heard} {INTERRUPTED}"
    if where == "mid-word":  # a part of the second chunk: more than the first, less than both
        sentences = [e["text"] for e in events if e["type"] == "sentence"]
        assert heard.startswith(sentences[0]) and len(sentences[0]) < len(heard) < len(" ".join(sentences[:2]))


async def test_a_caller_that_goes_away_leaves_no_task_and_no_trace_of_an_unheard_turn(tts_server):
    voice = pipeline(tts_server.ws_url)
    tasks_before = len(asyncio.all_tasks())
    gen = voice.answer(VoiceRequest("Why?"), "s-gone")
    seen = await answer_until(gen, lambda s: s[-1]["type"] == "text")  # text, but no audio yet
    started = time.perf_counter()
    await gen.aclose()
    print(f"\ncaller gone -> answer closed in {(time.perf_counter() - started) * 1000:.1f} ms")
    assert not any(e["type"] == "audio" for e in seen)
    assert len(asyncio.all_tasks()) == tasks_before
    async with voice.conversations.turn("s-gone") as (agent, turn):
        assert agent.messages == [] and turn == 2, "nothing was heard, so the turn left no messages"


# Through the agent server ------------------------------------------------------------------------


def process_counts(pid: int) -> tuple[int, int]:
    """Open file descriptors (sockets included) and threads of a process."""
    return len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))


async def settled_counts(pid: int, baseline: tuple[int, int], within: float = 5.0) -> tuple[int, int]:
    """The process's counts once they are back at the baseline, or whatever they are after ``within`` s."""
    deadline = time.monotonic() + within
    while (counts := process_counts(pid)) > baseline and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return counts


@pytest.fixture(scope="module")
def agent(agent_server):
    server = agent_server("long")
    # One complete answer on each leg first: lazily created pools and threads exist from then on.
    asyncio.run(ask("warm up", Options(url=server.http_url, ws=True)))
    return server


async def test_ws_answer_carries_the_same_events_and_audio_as_sse_without_base64(agent):
    from tests.support.answers import raw_answer

    _, sse = await raw_answer(agent.http_url, {"prompt": "Go."})
    frames = []
    async with websockets.connect(agent.http_url.replace("http", "ws") + "/ws") as ws:
        await ws.send(json.dumps({"type": "ask", "prompt": "Go."}))
        while True:
            message = await asyncio.wait_for(ws.recv(), 60)
            frames.append(message)
            if isinstance(message, str) and json.loads(message)["type"] in ("end", "error"):
                break
    ws_events, audio = [], {}
    for i, frame in enumerate(frames):
        if isinstance(frame, bytes):
            assert ws_events[-1]["type"] == "audio" and ws_events[-1]["bytes"] == len(frame)
            audio.setdefault(ws_events[-1]["index"], bytearray()).extend(frame)
            continue
        event = json.loads(frame)
        EVENT_SCHEMA.validate(event)
        assert "audio" not in event, "no Base64 on the binary leg"
        ws_events.append(event)
        if event["type"] == "audio":
            assert isinstance(frames[i + 1], bytes), "an audio header is followed by its binary frame"
    assert [e["seq"] for e in ws_events] == list(range(len(ws_events)))
    strip = ("seq", "audio", "bytes", "metrics", "session_id")
    for kind in ("start", "text", "sentence", "audio", "end"):  # how kinds interleave depends on timing
        assert [{k: v for k, v in e.items() if k not in strip} for e in ws_events if e["type"] == kind] == \
            [{k: v for k, v in e.items() if k not in strip} for e in sse if e["type"] == kind]
    sse_audio = {}
    for event in sse:
        if event["type"] == "audio":
            sse_audio.setdefault(event["index"], bytearray()).extend(events.decode_audio(event))
    assert audio == sse_audio, "the same audio, byte for byte (Kokoro is deterministic)"


async def test_ws_cancel_ends_the_answer_at_once_and_leaks_nothing(agent):
    pid = agent.process.pid
    baseline = process_counts(pid)
    stops = []
    for _ in range(3):
        answer = await ask("Go.", Options(url=agent.http_url, ws=True),
                           cancel_after=lambda a: a.time_to_first_audio_ms is not None)
        metrics = answer.server_metrics
        assert metrics["cancelled"] is True and answer.event_types[-1] == "end"
        assert metrics["stop_ms"] is not None
        stops.append(metrics["stop_ms"])
    print(f"\n/ws cancel -> stopped in {stops} ms (agent-side, model stream + TTS session)")
    assert await settled_counts(pid, baseline) <= baseline


async def test_a_new_ask_barges_in_on_the_current_answer(agent):
    async with websockets.connect(agent.http_url.replace("http", "ws") + "/ws") as ws:
        await ws.send(json.dumps({"type": "ask", "prompt": "First."}))
        received, asked_again = [], False
        while True:
            message = await asyncio.wait_for(ws.recv(), 60)
            if isinstance(message, bytes):
                if not asked_again:  # the first answer is being heard: the caller speaks again
                    await ws.send(json.dumps({"type": "ask", "prompt": "Second."}))
                    asked_again = True
                continue
            event = json.loads(message)
            received.append(event)
            if event["type"] == "end" and [e["type"] for e in received].count("start") == 2:
                break
    ends = [e for e in received if e["type"] == "end"]
    assert [e["metrics"]["cancelled"] for e in ends] == [True, False]
    first_end = received.index(ends[0])
    assert received[first_end + 1]["type"] == "start" and received[first_end + 1]["turn"] == 2


async def test_a_bad_ws_message_gets_an_error_and_the_connection_goes_on(agent):
    async with websockets.connect(agent.http_url.replace("http", "ws") + "/ws") as ws:
        for bad in ("not json", json.dumps([1]), json.dumps({"type": "dance"}), b"\xff\xfe"):
            await ws.send(bad)
            error = json.loads(await asyncio.wait_for(ws.recv(), 10))
            EVENT_SCHEMA.validate(error)
            assert error["type"] == "error" and error["seq"] is None and error["code"] == "invalid_request"
        await ws.send(json.dumps({"type": "ask", "prompt": "Go.", "mode": "sideways"}))
        refused = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert refused["type"] == "error" and refused["seq"] == 0 and "mode" in refused["message"]
        await ws.send(json.dumps({"type": "ask", "prompt": "Go."}))
        while isinstance(message := await asyncio.wait_for(ws.recv(), 60), bytes) or \
                json.loads(message)["type"] not in ("end", "error"):
            pass
        assert json.loads(message)["type"] == "end"


@pytest.mark.parametrize("leg", ["sse", "ws"])
async def test_a_caller_that_disconnects_mid_answer_leaks_nothing_in_the_agent(agent, leg, artifacts: Path):
    pid = agent.process.pid
    baseline = process_counts(pid)
    log = artifacts / "agent-long.log"
    abandoned_before = log.read_text().count("answer abandoned by the caller")
    for _ in range(3):
        if leg == "sse":
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{agent.http_url}/invocations", json={"prompt": "Go."}) as response:
                    async for line in response.content:
                        if line.startswith(b'data: {"type": "audio"'):
                            break  # leaving the block drops the connection mid-answer
        else:
            async with websockets.connect(agent.http_url.replace("http", "ws") + "/ws") as ws:
                await ws.send(json.dumps({"type": "ask", "prompt": "Go."}))
                while not isinstance(await asyncio.wait_for(ws.recv(), 60), bytes):
                    pass
    assert await settled_counts(pid, baseline) <= baseline, "sockets or threads left behind"
    deadline = time.monotonic() + 10
    while log.read_text().count("answer abandoned by the caller") < abandoned_before + 3:
        assert time.monotonic() < deadline, "the agent did not stop the abandoned answers"
        await asyncio.sleep(0.1)
    stops = [line.rsplit(" in ", 1)[1] for line in log.read_text().splitlines()
             if "answer abandoned by the caller" in line][-3:]
    print(f"\n{leg} disconnect -> agent stopped model and TTS in {stops}")
