"""The offline language model: SmolLM2-135M through llama.cpp, a real token stream.

Answers from a 135M model are weak, so these tests check the streaming mechanics and determinism,
not whether the answers are true."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest
from strands import Agent
from strands.types.exceptions import MaxTokensReachedException

from agent.config import DEFAULT_SYSTEM_PROMPT
from agent.llm.local import LocalModel, LocalModelError, _repeating, worker_pid
from agent.llm.recorder import record
from agent.llm.replay import load_recording
from tests.support.agents import agent_running
from tests.support.processes import alive, child_running
from voice_agent.caller import CallerError, Options, ask

QUESTION = "Why is the sky blue?"


async def answer(model: LocalModel) -> tuple[str, list[float]]:
    """The streamed text and when each piece arrived; the answer may stop at the token limit."""
    agent = Agent(model=model, system_prompt=DEFAULT_SYSTEM_PROMPT, callback_handler=None)
    started = time.perf_counter()
    text, arrivals = "", []
    with contextlib.suppress(MaxTokensReachedException):
        async for event in agent.stream_async(QUESTION):
            if isinstance(event.get("data"), str) and event["data"]:
                text += event["data"]
                arrivals.append(time.perf_counter() - started)
    return text, arrivals


async def test_the_local_model_streams_a_real_answer_token_by_token():
    text, arrivals = await answer(LocalModel(max_tokens=60))
    assert len(text.split()) >= 5
    assert len(arrivals) >= 20, "tokens arrive one by one, not as one block"
    assert arrivals[-1] - arrivals[0] > 0.05, "the stream has the model's pace"


async def test_a_fixed_seed_gives_the_same_answer():
    first, _ = await answer(LocalModel(max_tokens=40, seed=11))
    second, _ = await answer(LocalModel(max_tokens=40, seed=11))
    assert first == second


def test_runaway_repetition_is_detected():
    loop = " ".join(["les Révolutionnaires,"] * 20)
    assert _repeating(loop.split())
    assert not _repeating("one two three four five six seven eight nine ten eleven twelve".split() * 1)


async def test_a_recording_of_the_local_model_replays_the_same_text(tmp_path):
    path = tmp_path / "local.jsonl"
    count = await record(LocalModel(max_tokens=40), QUESTION, path, system_prompt=DEFAULT_SYSTEM_PROMPT,
                         model_id="local")
    recording = load_recording(path)
    assert count == len(recording.events)
    assert recording.meta["prompt"] == QUESTION
    assert len(recording.text.split()) >= 5
    offsets = [offset for offset, _ in recording.events]
    assert offsets == sorted(offsets) and offsets[-1] > 0


async def test_the_agent_speaks_a_local_model_answer_end_to_end(tts_server, artifacts):
    from agent.chunker import SentenceChunker
    from tests.support.answers import raw_answer

    async with agent_running(tts_server.ws_url, model="local", log_path=str(artifacts / "agent-local.log")) as agent:
        _, events = await raw_answer(agent.http_url, {"prompt": QUESTION})
    assert events[-1]["type"] == "end", events[-1]
    text = "".join(event["text"] for event in events if event["type"] == "text")
    chunker = SentenceChunker()
    expected = chunker.feed(text) + chunker.flush()
    sentences = [event for event in events if event["type"] == "sentence"]
    assert [event["text"] for event in sentences] == expected
    audio_indices = [event["index"] for event in events if event["type"] == "audio"]
    assert audio_indices == sorted(audio_indices)
    assert set(audio_indices) == {event["index"] for event in sentences if event["speech"]}


async def test_a_killed_model_process_fails_that_answer_clearly_and_the_next_answer_works():
    agent = Agent(model=LocalModel(max_tokens=120), system_prompt=DEFAULT_SYSTEM_PROMPT, callback_handler=None)
    deltas = 0
    with pytest.raises(LocalModelError, match=r"the local model process \(pid \d+\) was killed by signal SIGKILL"):
        async for event in agent.stream_async(QUESTION):
            if isinstance(event.get("data"), str) and event["data"]:
                deltas += 1
                if deltas == 3:
                    os.kill(worker_pid(), signal.SIGKILL)
    text, _ = await answer(LocalModel(max_tokens=20))
    assert text.strip(), "a new worker answered"


async def test_the_agent_server_survives_its_model_process_dying_mid_answer(tts_server, artifacts):
    async with agent_running(tts_server.ws_url, model="local",
                             log_path=str(artifacts / "agent-local-killed.log")) as agent:
        worker = child_running(agent.process.pid, "agent.llm.local_worker")

        def kill_at_first_text(event: dict) -> None:
            if event["type"] == "text" and alive(worker):
                os.kill(worker, signal.SIGKILL)

        with pytest.raises(CallerError, match="model_failed: the local model process .* killed by signal SIGKILL"):
            await ask(QUESTION, Options(url=agent.http_url), on_event=kill_at_first_text)
        assert not agent.died()
        again = await ask(QUESTION, Options(url=agent.http_url))
        assert again.text and again.audio, "the next answer is spoken by a new model process"
