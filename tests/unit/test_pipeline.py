"""The answer pipeline in process: the real stages, the real Strands agent loop replaying a
recording, the real TTS session client; the TTS container is the in-memory fake at the transport
boundary (the same behaviours run against the real container in tests/integration)."""

from __future__ import annotations

import asyncio

import pytest

from agent.audio_encoding import FORMATS
from agent.chunker import SentenceChunker
from agent.conversation import INTERRUPTED
from agent.llm.replay import ReplayModel, load_recording
from agent.pipeline import BargeIn, VoicePipeline
from agent.speech_text import SpeechText
from agent.tts_client import TTSSession
from caller_protocol import VoiceRequest
from tests.support.answers import EVENT_SCHEMA, expected_sentences, heard_by
from tests.support.fake_tts import FakeTTS, fake_pcm, fake_words


class FailingModel(ReplayModel):
    """Streams the first ``after`` events of a recording, then fails as a broken stream does."""

    def __init__(self, after: int) -> None:
        super().__init__(load_recording("long"), speed=1000)
        self.after = after

    async def stream(self, *args, **kwargs):
        count = 0
        async for event in super().stream(*args, **kwargs):
            if count == self.after:
                raise ConnectionError("the model's stream broke")
            count += 1
            yield event


def pipeline(fake: FakeTTS, *, recording: str = "long", speed: float = 1000, model=None, **options) -> VoicePipeline:
    return VoicePipeline(model or (lambda: ReplayModel(load_recording(recording), speed=speed)), fake.connect,
                         system_prompt="Be brief.", session_factory=TTSSession, **options)


async def collect(answer) -> list[dict]:
    return [event async for event in answer]


def audio_of(events: list[dict]) -> dict[int, bytes]:
    audio: dict[int, bytearray] = {}
    for event in events:
        if event["type"] == "audio":
            audio.setdefault(event["index"], bytearray()).extend(event["audio"])
    return {index: bytes(data) for index, data in audio.items()}


def checked(events: list[dict]) -> list[dict]:
    """Every event valid against the schema (audio as the leg would frame it), numbered from 0."""
    from caller_protocol.events import to_json

    for event in events:
        EVENT_SCHEMA.validate(to_json(event))
    assert [event["seq"] for event in events] == list(range(len(events)))
    return events


async def test_an_answer_is_every_sentence_spoken_in_order_then_its_end():
    events = checked(await collect(pipeline(FakeTTS()).answer(VoiceRequest("Go."))))
    assert events[0]["type"] == "start" and events[-1]["type"] == "end"
    sentences = [event for event in events if event["type"] == "sentence"]
    assert [event["text"] for event in sentences] == expected_sentences("long")
    speech = SpeechText()
    assert audio_of(events) == {event["index"]: fake_pcm(speech(event["text"])) for event in sentences}
    indices = [event["index"] for event in events if event["type"] == "audio"]
    assert indices == sorted(indices)
    assert "".join(event["text"] for event in events if event["type"] == "text") == load_recording("long").text
    metrics = events[-1]["metrics"]
    assert metrics["sentences"] == len(sentences) and metrics["cancelled"] is False
    assert metrics["audio_bytes"] == sum(len(data) for data in audio_of(events).values())


@pytest.mark.parametrize("fmt", ["pcm16", "mp3"])
async def test_each_chunks_words_come_before_its_audio_on_the_answers_one_timeline(fmt):
    events = checked(await collect(pipeline(FakeTTS()).answer(VoiceRequest("Go.", format=fmt))))
    speech = {event["index"]: event["speech"] for event in events if event["type"] == "sentence"}
    delay_ms = FORMATS[fmt].delay_samples * 1000 / 24_000
    start_ms = 0.0
    for index in sorted(speech):
        timed = [event for event in events if event["type"] == "words" and event["index"] == index]
        first_audio = next(i for i, event in enumerate(events) if event["type"] == "audio" and event["index"] == index)
        assert len(timed) == 1 and events.index(timed[0]) < first_audio, "the words come before their audio"
        shift = start_ms + delay_ms
        expected = [(word.word, round(word.start_ms + shift, 1), round(word.end_ms + shift, 1))
                    for word in fake_words(speech[index])]
        assert [(word["word"], word["start_ms"], word["end_ms"]) for word in timed[0]["words"]] == expected
        start_ms += len(fake_pcm(speech[index])) / 2 * 1000 / 24_000


async def test_batch_mode_speaks_the_whole_answer_as_one_chunk_after_the_model_ends():
    events = checked(await collect(pipeline(FakeTTS()).answer(VoiceRequest("Go.", mode="batch"))))
    sentences = [event for event in events if event["type"] == "sentence"]
    assert [event["text"] for event in sentences] == [load_recording("long").text.strip()]
    last_text = max(i for i, event in enumerate(events) if event["type"] == "text")
    assert events.index(sentences[0]) > last_text


@pytest.mark.parametrize("model_speed", [1000, 1], ids=["model-finished", "model-still-writing"])
async def test_a_cancel_ends_the_answer_with_nothing_after_it_and_every_stage_stopped(model_speed):
    """Whether or not the model has finished when the caller barges in, the next event is the end."""
    voice = pipeline(FakeTTS(delay=0.05), speed=model_speed)
    cancel = asyncio.Event()
    tasks_before = len(asyncio.all_tasks())
    before, after = [], []
    async for event in voice.answer(VoiceRequest("Go."), "s", cancel):
        (after if cancel.is_set() else before).append(event)
        if event["type"] == "audio":
            cancel.set()
    assert [event["type"] for event in after] == ["end"]
    assert after[0]["metrics"]["cancelled"] is True and after[0]["metrics"]["stop_ms"] >= 0
    assert len(asyncio.all_tasks()) == tasks_before, "a stage outlived the answer"
    async with voice.conversations.turn("s") as (agent, _):
        said = agent.messages[-1]["content"][0]["text"]
    heard = [event["index"] for event in before if event["type"] == "audio"]
    assert said == " ".join(event["text"] for event in before if event["type"] == "sentence"
                            and event["index"] <= max(heard))


async def test_a_caller_that_goes_away_stops_every_stage_and_leaves_no_trace_of_an_unheard_turn():
    voice = pipeline(FakeTTS(delay=0.5), speed=1)
    tasks_before = len(asyncio.all_tasks())
    answer = voice.answer(VoiceRequest("Go."), "gone")
    async for event in answer:
        if event["type"] == "text":
            break
    await answer.aclose()
    assert len(asyncio.all_tasks()) == tasks_before
    async with voice.conversations.turn("gone") as (agent, turn):
        assert agent.messages == [] and turn == 2


async def test_a_shutdown_lets_an_answer_in_progress_finish_within_the_grace_and_refuses_new_ones():
    voice = pipeline(FakeTTS(), shutdown_grace=60)
    answer = voice.answer(VoiceRequest("Go."), "s")
    events = [await anext(answer)]
    shutting_down = asyncio.create_task(voice.shut_down())
    events += [event async for event in answer]
    assert events[-1]["type"] == "end" and events[-1]["metrics"]["cancelled"] is False
    assert [event["text"] for event in events if event["type"] == "sentence"] == expected_sentences("long")
    assert await shutting_down == 0, "no answer was ended early"
    refused = checked(await collect(voice.answer(VoiceRequest("Again."), "s")))
    assert [(event["type"], event["code"]) for event in refused] == [("error", "shutting_down")]


async def test_an_answer_still_running_when_the_shutdown_grace_ends_ends_with_shutting_down_and_stops_every_stage():
    voice = pipeline(FakeTTS(delay=0.05), speed=1, shutdown_grace=0.2)  # the recording lasts seconds at speed 1
    tasks_before = len(asyncio.all_tasks())
    answer = voice.answer(VoiceRequest("Go."), "s")
    events = [await anext(answer)]
    shutting_down = asyncio.create_task(voice.shut_down())
    events += [event async for event in answer]
    assert await shutting_down == 1
    checked(events)
    assert events[-1]["type"] == "error" and events[-1]["code"] == "shutting_down"
    assert "within 0.2 s" in events[-1]["message"]
    assert len(asyncio.all_tasks()) == tasks_before, "a stage outlived the answer"


async def test_an_unknown_voice_is_an_invalid_request_before_any_audio():
    events = checked(await collect(pipeline(FakeTTS()).answer(VoiceRequest("Go.", voice="nobody"))))
    assert events[-1]["type"] == "error" and events[-1]["code"] == "invalid_request"
    assert "audio" not in [event["type"] for event in events]


async def test_a_model_that_fails_mid_answer_ends_it_with_model_failed_and_keeps_what_was_heard():
    voice = pipeline(FakeTTS(), model=lambda: FailingModel(after=60))
    events = checked(await collect(voice.answer(VoiceRequest("Go."), "broken")))
    assert events[-1]["type"] == "error" and events[-1]["code"] == "model_failed"
    assert "the model's stream broke" in events[-1]["message"]
    async with voice.conversations.turn("broken") as (agent, _):
        heard = {event["index"] for event in events if event["type"] == "audio"}
        said = " ".join(event["text"] for event in events if event["type"] == "sentence" and event["index"] in heard)
        assert said, "some of the answer was heard before the model failed"
        assert [m["content"][0]["text"] for m in agent.messages] == ["Go.", said]


async def test_a_lost_tts_connection_resumes_with_every_byte_once():
    fake = FakeTTS(break_after=5)
    events = checked(await collect(pipeline(fake).answer(VoiceRequest("Go."))))
    assert events[-1]["type"] == "end" and len(fake.sessions) == 2, "the session was reopened once"
    speech = SpeechText()
    sentences = [event for event in events if event["type"] == "sentence"]
    assert audio_of(events) == {event["index"]: fake_pcm(speech(event["text"])) for event in sentences}


async def test_without_pipelining_each_sentence_is_sent_after_the_previous_ones_audio():
    events = await collect(pipeline(FakeTTS(), pipelining=False).answer(VoiceRequest("Go.")))
    last_audio: dict[int, int] = {}
    for position, event in enumerate(events):
        if event["type"] == "audio":
            last_audio[event["index"]] = position
        if event["type"] == "sentence" and event["index"] > 0:
            assert last_audio[event["index"] - 1] < position


async def test_the_quick_first_chunk_setting_reaches_the_chunker():
    quick = await collect(pipeline(FakeTTS(), recording="clauses").answer(VoiceRequest("Go.")))
    whole = await collect(pipeline(FakeTTS(), recording="clauses",
                                   chunker_factory=lambda: SentenceChunker(quick_first_chunk=False))
                          .answer(VoiceRequest("Go.")))
    first = [next(e["text"] for e in events if e["type"] == "sentence") for events in (quick, whole)]
    assert len(first[0]) < len(first[1])


async def test_an_answer_cancelled_again_while_it_stops_still_stops_every_stage(caplog):
    """A caller whose task is cancelled twice (its socket closed mid-send, then the connection
    handler cancels it) still has its answer stopped at once: no stage or session left running."""
    voice = pipeline(FakeTTS(delay=0.5), speed=0.2)
    tasks_before = len(asyncio.all_tasks())
    heard = asyncio.Event()

    async def consume() -> None:
        async for event in voice.answer(VoiceRequest("Go.")):
            if event["type"] == "audio":
                heard.set()

    consumer = asyncio.create_task(consume())
    await heard.wait()
    consumer.cancel()
    await asyncio.sleep(0)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    for _ in range(20):  # one second: far less than the rest of the answer would take
        if len(asyncio.all_tasks()) == tasks_before:
            break
        await asyncio.sleep(0.05)
    assert len(asyncio.all_tasks()) == tasks_before, "a stage or the session outlived the answer"
    assert "answer abandoned by the caller" in caplog.text


def position(events: list[dict], played: str) -> float:
    """A playback position, named, worked out from the events of the first two chunks."""
    first, second = (next(e for e in events if e["type"] == "words" and e["index"] == index)["words"]
                     for index in (0, 1))
    chunk_end = len(fake_pcm(next(e for e in events if e["type"] == "sentence")["speech"])) / 2 / 24
    return {"before any audio": 0.0, "between sentences": chunk_end,
            "inside the first": (first[0]["start_ms"] + first[0]["end_ms"]) / 2 + 1,
            "mid-word": (second[2]["start_ms"] + second[2]["end_ms"]) / 2 + 1}[played]


async def interrupted_at(played: str) -> tuple[list[dict], list[dict], float]:
    """Barge in once the third chunk's audio arrives, saying the listener had played to the named
    position; the events, the conversation after it, and the position."""
    voice = pipeline(FakeTTS(), speed=1)
    cancel = BargeIn()
    events: list[dict] = []
    async for event in voice.answer(VoiceRequest("Go."), "s", cancel):
        events.append(event)
        if event["type"] == "audio" and event["index"] == 2 and not cancel.is_set():
            cancel.interrupt(position(events, played))
    async with voice.conversations.turn("s") as (agent, _):
        return events, agent.messages, position(events, played)


@pytest.mark.parametrize("played", ["mid-word", "between sentences", "inside the first"])
async def test_a_barge_in_that_says_where_playback_stopped_keeps_exactly_the_words_heard(played):
    events, messages, played_ms = await interrupted_at(played)
    assert events[-1]["type"] == "end" and events[-1]["metrics"]["cancelled"]
    kept = messages[-1]["content"][0]["text"]
    assert kept.endswith(INTERRUPTED)
    said = kept.removesuffix(INTERRUPTED).strip()
    assert said and said == heard_by(events, played_ms)


async def test_a_barge_in_before_any_audio_was_played_leaves_no_trace_of_the_turn():
    _, messages, _ = await interrupted_at("before any audio")
    assert messages == []


async def test_a_listener_who_stops_after_the_answer_completed_still_cuts_it_to_what_was_heard():
    voice = pipeline(FakeTTS())
    events = [event async for event in voice.answer(VoiceRequest("Go."), "after")]
    assert events[-1]["type"] == "end" and not events[-1]["metrics"]["cancelled"]
    played_ms = position(events, "mid-word")
    assert await voice.played("after", played_ms)
    async with voice.conversations.turn("after") as (agent, _):
        assert agent.messages[-1]["content"][0]["text"] == f"{heard_by(events, played_ms)} {INTERRUPTED}"
    assert not await voice.played("after", played_ms), "a later turn has begun: the earlier one stays"


async def test_playback_that_reached_the_end_keeps_the_whole_answer():
    voice = pipeline(FakeTTS())
    events = [event async for event in voice.answer(VoiceRequest("Go."), "whole")]
    total_ms = sum(len(event["audio"]) for event in events if event["type"] == "audio") / 48
    assert not await voice.played("whole", total_ms)
    async with voice.conversations.turn("whole") as (agent, _):
        assert agent.messages[-1]["content"][0]["text"] == load_recording("long").text.strip()
