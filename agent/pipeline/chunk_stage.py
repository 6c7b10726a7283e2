"""Text frames -> chunks ready to speak: the sentence chunker (incremental mode) or the whole
answer at once (batch mode), each chunk also made speech-ready (``agent.speech_text``).

Guarantees: text frames pass through unchanged and in order; each chunk is emitted the moment the
chunker completes it, numbered from 0; at ``ModelDone`` the unfinished tail is flushed, so every
character the model wrote is in exactly one chunk (the chunkers are lossless); empty chunks are not
emitted. No state outlives the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agent.pipeline.frames import ChunkFrame, ErrorFrame, FrameQueue, ModelDone, TextFrame
from agent.pipeline.stage import Stage
from agent.speech_text import SpeechText


class Chunker(Protocol):
    def feed(self, delta: str) -> list[str]: ...

    def flush(self) -> list[str]: ...


class WholeAnswerChunker:
    """Batch mode's chunker: the whole answer, stripped, as one chunk once the model has finished."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def feed(self, delta: str) -> list[str]:
        self._parts.append(delta)
        return []

    def flush(self) -> list[str]:
        whole = "".join(self._parts).strip()
        self._parts = []
        return [whole] if whole else []


class ChunkStage(Stage):
    name = "chunk"

    def __init__(self, chunker: Chunker, speech_text: Callable[[str], str] | None = None) -> None:
        self._chunker = chunker
        self._speech_text = speech_text or SpeechText()
        self._count = 0

    async def process(self, inbox: FrameQueue, outbox: FrameQueue) -> None:
        while True:
            frame = await inbox.get()
            if isinstance(frame, TextFrame):
                await outbox.put(frame)
                for chunk in self._chunker.feed(frame.text):
                    await self._emit(chunk, outbox)
            elif isinstance(frame, ModelDone):
                for chunk in self._chunker.flush():
                    await self._emit(chunk, outbox)
                await outbox.put(frame)
                return
            elif isinstance(frame, ErrorFrame):
                await outbox.put(frame)
                return

    async def _emit(self, chunk: str, outbox: FrameQueue) -> None:
        if chunk:
            await outbox.put(ChunkFrame(self._count, chunk, self._speech_text(chunk)))
            self._count += 1
