"""Each stage of an answer alone: frames in, frames out, no server (the TTS stage talks to the
in-memory TTS at the transport boundary)."""

from __future__ import annotations

import asyncio
import json

import pytest
from strands import Agent

from agent.chunker import SentenceChunker
from agent.llm.replay import ReplayModel, load_recording
from agent.pipeline.audio_stage import AudioStage
from agent.pipeline.chunk_stage import ChunkStage, WholeAnswerChunker
from agent.pipeline.frames import (
    AudioFrame,
    ChunkFrame,
    ErrorFrame,
    FrameQueue,
    Interrupted,
    ModelDone,
    PcmFrame,
    SentenceSent,
    SynthesisDone,
    TextFrame,
)
from agent.pipeline.model_stage import ModelStage
from agent.pipeline.tts_stage import WINDOWED_REQUESTS, TTSStage
from agent.tts_client import TTSSession
from tests.support.fake_tts import FakeTTS, fake_pcm


async def run(stage, inputs: list) -> list:
    """Feed ``inputs`` to ``stage``; everything it sends on, in order."""
    inbox, outbox = FrameQueue(1024), FrameQueue(1024)
    for frame in inputs:
        await inbox.put(frame)
    assert await stage.run(inbox, outbox) in (True, False)
    out = []
    while len(outbox):
        out.append(await outbox.get())
    return out


async def test_the_model_stage_streams_every_delta_then_model_done():
    agent = Agent(model=ReplayModel(load_recording("short"), speed=1000), callback_handler=None)
    out = await run(ModelStage(agent, "Go."), [])
    assert "".join(f.text for f in out if isinstance(f, TextFrame)) == load_recording("short").text
    assert isinstance(out[-1], ModelDone) and not out[-1].truncated


async def test_the_chunk_stage_passes_text_on_and_adds_each_chunk_when_complete():
    out = await run(ChunkStage(SentenceChunker()), [TextFrame("Hello there. How a"), TextFrame("re you"),
                                                    ModelDone()])
    kinds = [type(f).__name__ for f in out]
    assert kinds == ["TextFrame", "ChunkFrame", "TextFrame", "ChunkFrame", "ModelDone"]
    chunks = [f for f in out if isinstance(f, ChunkFrame)]
    assert [(c.index, c.written) for c in chunks] == [(0, "Hello there."), (1, "How are you")]


async def test_batch_mode_chunks_the_whole_answer_once_at_the_end():
    out = await run(ChunkStage(WholeAnswerChunker()), [TextFrame(" One. "), TextFrame("Two. "), ModelDone()])
    assert [f.written for f in out if isinstance(f, ChunkFrame)] == ["One. Two."]


async def test_the_tts_stage_gives_each_chunk_its_audio_in_order_then_model_done():
    fake = FakeTTS()
    session = TTSSession(fake.connect)
    await session.open()
    inputs = [ChunkFrame(0, "One.", "One."), TextFrame("x"), ChunkFrame(1, "**", ""), ChunkFrame(2, "Two.", "Two."),
              ModelDone()]
    out = await run(TTSStage(session), inputs)
    await session.close()
    sent = [f.chunk.index for f in out if isinstance(f, SentenceSent)]
    assert sent == [0, 1, 2]
    audio = {i: b"".join(f.pcm for f in out if isinstance(f, PcmFrame) and f.index == i) for i in (0, 1, 2)}
    assert audio == {0: fake_pcm("One."), 1: b"", 2: fake_pcm("Two.")}
    assert [f.index for f in out if isinstance(f, SynthesisDone)] == [0, 2], "nothing to say, nothing synthesized"
    assert isinstance(out[-1], ModelDone)


async def test_the_tts_stage_asks_for_windows_on_an_answers_first_requests_only():
    fake = FakeTTS()
    session = TTSSession(fake.connect)
    await session.open()
    texts = ["One.", "Two.", "Three.", "Four."]
    inputs = [ChunkFrame(0, "**", ""), *(ChunkFrame(i + 1, text, text) for i, text in enumerate(texts)), ModelDone()]
    await run(TTSStage(session), inputs)
    await session.close()
    sent = [json.loads(message) for message in fake.sessions[0].received if '"synthesize"' in message]
    assert [(message["text"], message.get("windows", False)) for message in sent] == [
        (text, index < WINDOWED_REQUESTS) for index, text in enumerate(texts)]


async def test_the_audio_stage_encodes_one_stream_and_flushes_it_before_model_done():
    pcm = fake_pcm("A sentence of some length.")
    out = await run(AudioStage("mp3"), [PcmFrame(0, pcm, 24_000), PcmFrame(1, pcm, 24_000), ModelDone()])
    audio = [f for f in out if isinstance(f, AudioFrame)]
    assert sum(f.pcm_bytes for f in audio) == 2 * len(pcm)
    assert audio[-1].pcm_bytes == 0 and audio[-1].data, "the encoder's last frames, once"
    assert isinstance(out[-1], ModelDone)


async def test_audio_at_another_sample_rate_fails_the_stage_with_tts_failed():
    out = await run(AudioStage("pcm16"), [PcmFrame(0, b"\x00\x00", 16_000), ModelDone()])
    assert isinstance(out[-1], ErrorFrame) and out[-1].code == "tts_failed" and "16000 Hz" in out[-1].message


async def test_an_interruption_stops_a_stage_where_it_waits_and_is_passed_on():
    stopped = asyncio.Event()

    class Waiting(ChunkStage):
        async def stop(self) -> None:
            stopped.set()

    inbox, outbox = FrameQueue(4), FrameQueue(4)
    running = asyncio.create_task(Waiting(SentenceChunker()).run(inbox, outbox))
    await inbox.put(TextFrame("Half a sent"))
    await asyncio.sleep(0.01)
    inbox.interrupt()
    assert await asyncio.wait_for(running, 5) is True
    assert stopped.is_set()
    with pytest.raises(Interrupted):
        await outbox.get()


async def test_a_full_queue_never_blocks_an_interruption():
    queue = FrameQueue(1)
    await queue.put(TextFrame("a"))
    blocked = asyncio.create_task(queue.put(TextFrame("b")))
    await asyncio.sleep(0.01)
    queue.interrupt()
    await asyncio.wait_for(blocked, 5)
    with pytest.raises(Interrupted):
        await queue.get()
    await queue.put(TextFrame("c"))  # a no-op now, and it does not wait
