"""A TTS container in memory, for tests that put a fake at the TTS transport boundary: the real
``tts_protocol.server.ServerSession`` state machine answers, and the audio is a deterministic
stand-in (a tone whose length follows the text), produced without Kokoro. The same behaviours are
covered against the real container in ``tests/integration``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

import tts_protocol as protocol
from agent.transports import TransportClosed
from tts_protocol.server import EndOfInput, Job, Reply, ServerSession
from tts_server.model_files import SAMPLES_PER_FRAME
from tts_server.word_timing import PAUSES, Piece, spans

SAMPLES_PER_CHARACTER = 240
"""10 ms of audio per character of text, the order of a real voice's pace."""
FRAME_SAMPLES = 4_800
"""200 ms per audio frame, as the real container sends."""


def fake_words(text: str) -> list[protocol.Word]:
    """When :func:`fake_pcm` "speaks" each word of ``text``: character i sounds from i x 10 ms, and a
    word runs from its first letter to its last (trailing punctuation is its pause)."""
    words, position = [], 0
    for word in text.split():
        start = text.index(word, position)
        position = start + len(word)
        spoken = [index for index, char in enumerate(word) if char not in PAUSES]
        if spoken:
            words.append(protocol.Word(word, _ms(start + spoken[0]), _ms(start + spoken[-1] + 1)))
    return words


def _ms(characters: int) -> float:
    return round(characters * SAMPLES_PER_CHARACTER * 1000 / protocol.SAMPLE_RATE, 1)


def fake_pcm(text: str) -> bytes:
    """A 440 Hz tone, 10 ms per character: deterministic, so resumed audio can be compared."""
    samples = np.arange(max(1, len(text)) * SAMPLES_PER_CHARACTER)
    return (8000 * np.sin(2 * math.pi * 440 * samples / protocol.SAMPLE_RATE)).astype("<i2").tobytes()


@dataclass
class FakeTTS:
    """``await fake.connect()`` opens a session (use ``fake.connect`` as a ``Connect``).

    ``delay``: seconds before each request's audio, as a model's inference takes; ``break_after``:
    the connection drops once that many audio frames have been sent over all sessions (once);
    ``voices``: the voices it knows (another is ``unknown_voice``)."""

    delay: float = 0.0
    break_after: int | None = None
    voices: tuple[str, ...] = ("jf_alpha", "af_heart")
    sessions: list[FakeTransport] = field(default_factory=list)
    frames_sent: int = 0

    async def connect(self) -> FakeTransport:
        transport = FakeTransport(self)
        self.sessions.append(transport)
        return transport


class _Closed:
    def __init__(self, error: str | None) -> None:
        self.error = error


class FakeTransport:
    def __init__(self, fake: FakeTTS) -> None:
        self._fake = fake
        self._machine = ServerSession()
        self._frames: asyncio.Queue[str | bytes | _Closed] = asyncio.Queue()
        self._jobs: asyncio.Queue[Job | None] = asyncio.Queue()
        self._closed: _Closed | None = None
        self.received: list[str] = []
        """Every client message, in order."""
        self._worker = asyncio.ensure_future(self._work())

    async def send(self, message: str) -> None:
        if self._closed is not None:
            raise TransportClosed(self._closed.error)
        self.received.append(message)
        action = self._machine.receive(message)
        if isinstance(action, Reply):
            await self._frames.put(action.text)
        elif isinstance(action, (Job, EndOfInput)):
            await self._jobs.put(action if isinstance(action, Job) else None)

    async def receive(self) -> str | bytes:
        item = await self._frames.get() if self._closed is None else self._closed
        if isinstance(item, _Closed):
            self._closed = item
            raise TransportClosed(item.error)
        return item

    async def end_input(self) -> None:
        return None

    async def close(self) -> None:
        self._worker.cancel()
        if self._closed is None:
            self._frames.put_nowait(_Closed(None))

    async def _work(self) -> None:
        while (job := await self._jobs.get()) is not None:
            self._machine.begin(job)
            if not await self._answer(job):
                self._frames.put_nowait(_Closed("the connection was lost"))
                return
        self._frames.put_nowait(_Closed(None))  # the server closes after the last answer

    async def _answer(self, job: Job) -> bool:
        """Send the job's frames; False when the connection broke."""
        machine, request = self._machine, job.request
        if isinstance(request, protocol.ProtocolError):
            return await self._emit(machine.refusal(job))
        if request.voice is not None and request.voice not in self._fake.voices:
            return await self._emit(machine.fail(job, protocol.UNKNOWN_VOICE, f"unknown voice {request.voice!r}"))
        await asyncio.sleep(self._fake.delay)
        await self._emit(machine.start(job))
        for message in machine.words(job, fake_words(request.text)):
            await self._emit(message)
        pcm = fake_pcm(request.text)
        frame_bytes = FRAME_SAMPLES * protocol.SAMPLE_WIDTH
        for offset in range(0, len(pcm), frame_bytes):
            if self._fake.break_after is not None and self._fake.frames_sent >= self._fake.break_after:
                self._fake.break_after = None
                return False
            await self._emit(machine.audio(job, pcm[offset:offset + frame_bytes]))
            self._fake.frames_sent += 1
        return await self._emit(machine.complete(job, audio_bytes=len(pcm), first_inference_ms=self._fake.delay * 1e3))

    async def _emit(self, frame: str | bytes | None) -> bool:
        if frame is not None:
            await self._frames.put(frame)
        return True


class StubEngine:
    """An engine without a model, for the TTS app's in-process tests: each text's audio is
    :func:`fake_pcm`, so what a route returns can be compared byte for byte."""

    provider = "stub"
    voices = ("jf_alpha", "af_heart")

    def __init__(self) -> None:
        self.windowed: list[bool] = []
        """Whether each piece rendered was asked for in windows, in order."""

    def resolve_voice(self, voice: str | None) -> str:
        from tts_server.engine import UnknownVoiceError

        name = voice or self.voices[0]
        if name not in self.voices:
            raise UnknownVoiceError(f"unknown voice {name!r}; available: {', '.join(self.voices)}")
        return name

    def phonemize(self, text: str) -> list[Piece]:
        """One piece, the text itself, each character a "phoneme"."""
        if not any(character.isalpha() for character in text):
            return []
        words = text.split()
        owners = [index for index, word in enumerate(words) for _ in word]
        return [Piece(text, spans(words, owners, 0, text))]

    def infer(self, phonemes: str, voice: str, speed: float = 1.0) -> tuple[bytes, list[float]]:
        """:func:`fake_pcm`, and durations that say what :func:`fake_words` says."""
        frames = SAMPLES_PER_CHARACTER / SAMPLES_PER_FRAME
        return fake_pcm(phonemes), [0.0, *[frames] * len(phonemes), 0.0]

    def render(self, phonemes: str, voice: str, speed: float = 1.0, *,
               windowed: bool = False) -> Iterator[tuple[bytes, list[float]]]:
        """:meth:`infer`'s audio in one part (a fake has no windows; it records whether they were asked for)."""
        self.windowed.append(windowed)
        yield self.infer(phonemes, voice, speed)

    def warm_up(self) -> float:
        return 1.0
