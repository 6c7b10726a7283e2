"""Chunks -> speech: each chunk goes to the answer's one TTS session the moment it arrives, while
the audio of earlier chunks is still being synthesized and passed on (pipelining).

Guarantees: text frames pass through; for each chunk, in order, one ``SentenceSent`` when it is
handed to synthesis, then its audio as ``PcmFrame``s (each stretch of it preceded by a
``WordsFrame`` when the TTS server times its words) and one ``SynthesisDone``; ``ModelDone``
comes after the last chunk's audio. A chunk with nothing to say is announced and has no audio.
At most ``max_pending`` chunks wait for their audio to be passed on; beyond that the stage stops
taking chunks (and so, upstream, the model's text) until the audio catches up. With
``pipelining=False`` each chunk is sent only after the previous chunk's audio has passed, as a
sequential implementation would; it exists to measure what pipelining is worth. On an
interruption the session is aborted at once (no closing handshake, nothing in flight awaited).
A TTS failure ends the answer with ``tts_failed`` (an unknown voice: ``invalid_request``).
"""

from __future__ import annotations

import asyncio

from agent.pipeline.frames import (
    ChunkFrame,
    ErrorFrame,
    Frame,
    FrameQueue,
    ModelDone,
    PcmFrame,
    SentenceSent,
    SynthesisDone,
    WordsFrame,
)
from agent.pipeline.stage import Stage
from agent.tts_client import SynthesisStream, TTSSession

MAX_PENDING_CHUNKS = 64
"""Chunks sent to TTS whose audio has not been passed on yet: an answer rarely has a dozen."""
WINDOWED_REQUESTS = 2
"""An answer's first requests asked to be rendered in windows. The first: the listener waits for
it. The second: its whole render would start only when the first's last window is done, by which
time the listener has heard the first's opening and may run out before it is ready (`bench agent`
counted one such underrun on the `long` recording with the first alone); from the third on, the
audio already received keeps well ahead of a whole render."""


class TTSStage(Stage):
    name = "tts"

    def __init__(self, session: TTSSession, *, pipelining: bool = True,
                 max_pending: int = MAX_PENDING_CHUNKS) -> None:
        self._session = session
        self._pipelining = pipelining
        self._pending: asyncio.Queue[tuple[int, SynthesisStream | None] | Frame] = asyncio.Queue(max_pending)
        self._passed = 0
        self._passed_changed = asyncio.Condition()
        self._requested = 0
        """Requests of this answer sent so far."""

    async def process(self, inbox: FrameQueue, outbox: FrameQueue) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._send(inbox, outbox), name="tts-send")
                group.create_task(self._relay(outbox), name="tts-relay")
        except* Exception as failure:
            raise failure.exceptions[0] from None

    async def stop(self) -> None:
        await self._session.abort()

    async def _send(self, inbox: FrameQueue, outbox: FrameQueue) -> None:
        while True:
            frame = await inbox.get()
            if isinstance(frame, ChunkFrame):
                if not self._pipelining:
                    async with self._passed_changed:
                        await self._passed_changed.wait_for(lambda index=frame.index: self._passed >= index)
                stream = None
                if frame.speech:
                    windows = self._requested < WINDOWED_REQUESTS
                    stream = await self._session.synthesize(frame.speech, windows=windows)
                    self._requested += 1
                await outbox.put(SentenceSent(frame))
                await self._pending.put((frame.index, stream))
            elif isinstance(frame, (ModelDone, ErrorFrame)):
                await self._pending.put(frame)
                return
            else:
                await outbox.put(frame)

    async def _relay(self, outbox: FrameQueue) -> None:
        while not isinstance(item := await self._pending.get(), (ModelDone, ErrorFrame)):
            assert isinstance(item, tuple)
            index, stream = item
            if stream is not None:
                async for item in stream.items():
                    await outbox.put(PcmFrame(index, item, stream.sample_rate) if isinstance(item, bytes)
                                     else WordsFrame(index, item))
                await outbox.put(SynthesisDone(index, stream.stats))
            async with self._passed_changed:
                self._passed += 1
                self._passed_changed.notify_all()
        await outbox.put(item)
