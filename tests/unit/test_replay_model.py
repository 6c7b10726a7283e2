"""The replay model: recordings load, and a real Strands agent streams them at their pace."""

from __future__ import annotations

import time

import pytest
from strands import Agent

from agent.llm.replay import RecordingError, ReplayModel, load_recording, packaged_recordings


def test_the_packaged_recordings_are_the_documented_examples():
    assert packaged_recordings() == ["clauses", "long", "markdown", "short", "unfinished"]
    long = load_recording("long")
    assert long.meta["prompt"]
    assert long.text.count(". ") >= 5
    assert not load_recording("unfinished").text.rstrip().endswith((".", "!", "?"))
    assert "**" in load_recording("markdown").text


async def test_a_strands_agent_streams_the_recording_at_its_recorded_pace():
    recording = load_recording("short")
    agent = Agent(model=ReplayModel(recording, speed=2.0), callback_handler=None)
    started = time.perf_counter()
    arrivals, text = [], ""
    async for event in agent.stream_async("hello"):
        if isinstance(event.get("data"), str):
            arrivals.append(time.perf_counter() - started)
            text += event["data"]
    assert text == recording.text
    deltas = [t for t, e in recording.events if "contentBlockDelta" in e]
    # Never earlier than recorded (halved by speed 2): the pacing is real, not instantaneous.
    assert arrivals[0] >= deltas[0] / 2
    assert arrivals[-1] >= deltas[-1] / 2


def test_a_bad_recording_is_refused_with_its_line_number(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"t": 0.1, "event": {"messageStart": {}}}\n{"t": "soon"}\n')
    with pytest.raises(RecordingError, match="bad.jsonl:2"):
        load_recording(path)
    with pytest.raises(RecordingError, match="no recording"):
        load_recording("does-not-exist")
