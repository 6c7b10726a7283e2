"""The whole path, offline, with real parts: `voice-agent ask` -> agent server (Strands agent loop
replaying a recorded Bedrock stream) -> chunker -> one TTS session -> Kokoro -> SSE back."""

from __future__ import annotations

import json
import wave

import pytest

from agent.llm.replay import load_recording
from tests.support.answers import expected_sentences, raw_answer
from tests.support.audio import assert_speech_like
from tests.support.cli import run_cli


def run_ask(url: str, mode: str, out: str) -> dict:
    completed = run_cli("ask", "Why is streaming faster?", "--url", url, "--mode", mode, "--out", out, "--json",
                        timeout=240)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.fixture(scope="module")
def answers(agent_server, tmp_path_factory):
    url = agent_server("long").http_url
    out = tmp_path_factory.mktemp("answers")
    return {mode: (run_ask(url, mode, str(out / f"{mode}.wav")), out / f"{mode}.wav")
            for mode in ("incremental", "batch")}


@pytest.mark.parametrize("mode", ["incremental", "batch"])
def test_ask_writes_a_24khz_pcm16_wav_of_the_whole_answer(answers, mode):
    summary, path = answers[mode]
    with wave.open(str(path)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24_000, 1, 2)
        pcm = wav.readframes(wav.getnframes())
    text = load_recording("long").text
    assert summary["text"] == text
    assert_speech_like(pcm, text)
    assert summary["audio_seconds"] == pytest.approx(len(pcm) / 48_000, abs=0.01)
    for key in ("time_to_first_audio_ms", "time_to_first_text_ms", "total_ms", "audio_seconds", "sentences"):
        assert summary[key] is not None
    heard_after = summary["time_to_first_speech_ms"] - summary["time_to_first_audio_ms"]
    assert 0 < heard_after <= 250, "speech starts within the 150 ms of leading silence kept, give or take a frame"


def test_incremental_speech_starts_before_batch_speech(answers):
    incremental, batch = answers["incremental"][0], answers["batch"][0]
    assert incremental["sentences"] == len(expected_sentences("long"))
    assert batch["sentences"] == 1
    assert incremental["time_to_first_audio_ms"] < batch["time_to_first_audio_ms"]


@pytest.mark.parametrize("recording", ["long", "markdown", "unfinished"])
async def test_every_chunked_sentence_comes_back_as_audio_in_order(agent_server, recording):
    body, events = await raw_answer(agent_server(recording).http_url, {"prompt": "Go.", "mode": "incremental"})
    assert [event["seq"] for event in events] == list(range(len(events)))
    assert events[0]["type"] == "start" and events[-1]["type"] == "end"

    sentences = [event for event in events if event["type"] == "sentence"]
    assert [event["text"] for event in sentences] == expected_sentences(recording)
    audio_order = [event["index"] for event in events if event["type"] == "audio"]
    assert audio_order == sorted(audio_order), "audio must arrive in sentence order"
    spoken = [event for event in sentences if event["speech"]]
    assert set(audio_order) == {event["index"] for event in spoken}, "every spoken sentence has audio"
    for event in spoken:
        assert "*" not in event["speech"] and "#" not in event["speech"]

    import base64
    for event in spoken:
        pcm = b"".join(base64.b64decode(e["audio"]) for e in events
                       if e["type"] == "audio" and e["index"] == event["index"])
        assert_speech_like(pcm, event["speech"])
    assert events[-1]["metrics"]["sentences"] == len(sentences)


async def test_the_unpunctuated_tail_is_flushed_and_spoken(agent_server):
    _, events = await raw_answer(agent_server("unfinished").http_url, {"prompt": "Go."})
    last = [event for event in events if event["type"] == "sentence"][-1]
    assert last["text"].endswith("time to first audio")
    assert any(event["type"] == "audio" and event["index"] == last["index"] for event in events)


@pytest.mark.parametrize(("payload", "message"), [
    ({"prompt": ""}, "prompt"),
    ({"prompt": "hi", "mode": "sideways"}, "mode"),
    ({"prompt": "hi", "speed": 7}, "speed"),
    ({"prompt": "hi", "colour": "blue"}, "unknown fields"),
    ({"prompt": "hi", "voice": "../../etc/passwd"}, "voice"),
    ({"prompt": "hi", "voice": "x" * 65}, "voice"),
    ({"prompt": "hi", "format": "flac"}, "format"),
])
async def test_an_invalid_payload_gets_an_error_event(agent_server, payload, message):
    _, events = await raw_answer(agent_server("short").http_url, payload)
    assert len(events) == 1
    assert events[0]["type"] == "error" and events[0]["code"] == "invalid_request"
    assert message in events[0]["message"]


async def test_an_unknown_voice_is_refused_before_any_audio(agent_server):
    _, events = await raw_answer(agent_server("short").http_url, {"prompt": "hi", "voice": "nobody"})
    assert "audio" not in [event["type"] for event in events]
    assert events[-1]["type"] == "error"
    assert events[-1]["code"] == "invalid_request" and "unknown_voice" in events[-1]["message"]


async def test_turns_of_one_agentcore_session_continue_one_conversation(agent_server):
    url = agent_server("short").http_url
    first = "session-a-0123456789abcdef0123456789"
    starts = []
    for session_id in (first, first, "session-b-0123456789abcdef0123456789"):
        _, events = await raw_answer(url, {"prompt": "Hello again."}, session_id)
        starts.append((events[0]["session_id"], events[0]["turn"]))
    assert starts == [(first, 1), (first, 2), ("session-b-0123456789abcdef0123456789", 1)]
