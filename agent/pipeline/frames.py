"""The typed frames that pass between the stages of an answer, and the bounded queue that carries
them (the shape Pipecat uses: processors joined by typed frames, interruption a frame too).

Data path, stage by stage (``agent.pipeline``):

    model stage   -> TextFrame*, ModelDone
    chunk stage   -> TextFrame*, ChunkFrame*, ModelDone            (passes text on, adds chunks)
    tts stage     -> TextFrame*, SentenceSent*, WordsFrame*, PcmFrame*, SynthesisDone*, ModelDone
    audio stage   -> TextFrame*, SentenceSent*, WordsFrame*, AudioFrame*, SynthesisDone*, ModelDone
    caller        -> the caller's events

``ModelDone`` is the last frame of a complete answer at every hop; an ``ErrorFrame`` is the last
frame of a failed one. An interruption (a barge-in, a caller gone) overtakes every frame queued
before it (:meth:`FrameQueue.interrupt`); each stage, seeing it, stops its work and passes it on.
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass, field
from typing import Any

from tts_protocol import Word


def _now() -> float:
    return time.perf_counter()


@dataclass(frozen=True, kw_only=True)
class _Frame:
    at: float = field(default_factory=_now)
    """When the frame was made (``time.perf_counter()``); the answer's figures are read off it."""


@dataclass(frozen=True)
class TextFrame(_Frame):
    """A delta of the model's answer text."""

    text: str


@dataclass(frozen=True)
class ModelDone(_Frame):
    """The model's stream ended; ``at`` is when, ``truncated`` whether at its token limit."""

    truncated: bool = False


@dataclass(frozen=True)
class ChunkFrame(_Frame):
    """A chunk of the answer ready to speak: ``written`` as the model wrote it, ``speech`` as the
    TTS should say it (empty when there is nothing to say)."""

    index: int
    written: str
    speech: str


@dataclass(frozen=True)
class SentenceSent(_Frame):
    """``chunk`` was handed to speech synthesis (``chunk.at``: when its text was ready)."""

    chunk: ChunkFrame


@dataclass(frozen=True)
class PcmFrame(_Frame):
    """Synthesized audio of chunk ``index``: PCM16 mono at ``sample_rate``."""

    index: int
    pcm: bytes
    sample_rate: int


@dataclass(frozen=True)
class WordsFrame(_Frame):
    """When each of the next words of chunk ``index`` is heard, before the audio that speaks them:
    from the TTS stage, milliseconds of the chunk's own audio; from the audio stage on, of the
    answer's audio as the caller plays it (``timeline`` says which)."""

    index: int
    words: tuple[Word, ...]
    timeline: str = "chunk"


@dataclass(frozen=True)
class SynthesisDone(_Frame):
    """All of chunk ``index``'s audio has passed; ``stats`` are the TTS server's figures for it."""

    index: int
    stats: dict[str, Any]


@dataclass(frozen=True)
class AudioFrame(_Frame):
    """Audio in the caller's format: ``data`` (possibly empty, while an encoder fills a frame)
    encoded from ``pcm_bytes`` of chunk ``index``'s PCM."""

    index: int
    data: bytes
    pcm_bytes: int


@dataclass(frozen=True)
class ErrorFrame(_Frame):
    """The answer failed: ``code`` is one of the caller protocol's error codes."""

    code: str
    message: str


class Interrupted(Exception):
    """The interruption, as a stage sees it: raised by :meth:`FrameQueue.get` once the queue was
    interrupted (the caller barged in, or went away)."""

Frame = (TextFrame | ModelDone | ChunkFrame | SentenceSent | WordsFrame | PcmFrame | SynthesisDone | AudioFrame
         | ErrorFrame)
TERMINAL = (ModelDone, ErrorFrame)


class FrameQueue:
    """A bounded queue of frames between two stages.

    ``put`` waits while ``maxsize`` frames are queued (a slow consumer slows its producers; memory
    stays bounded). :meth:`interrupt` drops every queued frame, makes every waiting and later
    :meth:`get` raise :class:`Interrupted`, and turns every waiting and later ``put`` into a no-op
    that returns at once; :attr:`interrupted` lets a stage notice it while it waits on something
    else. Safe with several producers (the TTS stage's sender and relay share an outbox).
    """

    def __init__(self, maxsize: int) -> None:
        self._frames: collections.deque[Frame] = collections.deque()
        self._maxsize = maxsize
        self._space = asyncio.Event()
        self._space.set()
        self._ready = asyncio.Event()
        self.interrupted = asyncio.Event()

    def __len__(self) -> int:
        return len(self._frames)

    async def put(self, frame: Frame) -> None:
        while not self.interrupted.is_set() and len(self._frames) >= self._maxsize:
            self._space.clear()
            await self._space.wait()
        if not self.interrupted.is_set():
            self._frames.append(frame)
            self._ready.set()

    async def get(self) -> Frame:
        """The next frame; raises :class:`Interrupted` once the queue was interrupted."""
        while not self._frames and not self.interrupted.is_set():
            self._ready.clear()
            await self._ready.wait()
        if self.interrupted.is_set():
            raise Interrupted
        frame = self._frames.popleft()
        self._space.set()
        return frame

    def interrupt(self) -> None:
        self.interrupted.set()
        self._frames.clear()
        self._ready.set()
        self._space.set()
