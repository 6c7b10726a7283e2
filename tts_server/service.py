"""The TTS service: an engine loaded in the background, the one thread that runs inference, and the
one synthesis path both routes use.

Inference is serialised on a single worker thread: each call gets every core, which on a small CPU
instance gives a lower time to first audio than running calls side by side. The engine is
injectable (anything with ``resolve_voice``, ``phonemize``, ``render``, ``warm_up`` and
``provider``), so the app can be tested through its real routes without loading Kokoro.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import tts_protocol as protocol
from tts_server.engine import KokoroEngine, UnknownVoiceError
from tts_server.model_files import SAMPLES_PER_FRAME
from tts_server.settings import ServerSettings
from tts_server.word_timing import Piece, word_times

log = logging.getLogger(__name__)

T = TypeVar("T")


class Engine(Protocol):
    provider: str

    def resolve_voice(self, voice: str | None) -> str: ...

    def phonemize(self, text: str) -> list[Piece]: ...

    def render(self, phonemes: str, voice: str, speed: float = 1.0, *,
               windowed: bool = False) -> Iterator[tuple[bytes, list[float] | None]]: ...

    def warm_up(self) -> float: ...


class SynthesisRefused(Exception):
    """The request cannot be spoken (unknown voice, nothing to say); refused before any audio."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Synthesis:
    """One request's figures, filled in as its audio is produced (sent with ``synthesis_complete``)."""

    received: float = field(default_factory=time.perf_counter)
    audio_bytes: int = 0
    pieces: int = 0
    phonemes: int = 0
    words: int = 0
    first_audio_ms: float | None = None
    inference_ms: list[float] = field(default_factory=list)
    """Inference time of each part rendered (a piece is one part, or one per window)."""
    windows: int = 0
    """Windows the first piece was rendered in (1: whole)."""

    def stats(self) -> dict[str, Any]:
        return {"audio_bytes": self.audio_bytes,
                "audio_seconds": round(protocol.pcm16_seconds(self.audio_bytes), 3),
                "pieces": self.pieces, "phonemes": self.phonemes, "words": self.words,
                "first_audio_ms": round(self.first_audio_ms or 0.0, 1),
                "first_inference_ms": round(self.inference_ms[0] if self.inference_ms else 0.0, 1),
                "windows": self.windows,
                "inference_ms": round(sum(self.inference_ms), 1),
                "synthesis_ms": round((time.perf_counter() - self.received) * 1000, 1)}


def load_kokoro(settings: ServerSettings) -> Engine:
    return KokoroEngine.load(settings.voices_path, threads=settings.threads, default_voice=settings.default_voice,
                             lead_ms=settings.lead_ms, static_decoder=settings.static_decoder)


class TTSService:
    def __init__(self, settings: ServerSettings,
                 load_engine: Callable[[ServerSettings], Engine] = load_kokoro) -> None:
        self.settings = settings
        self.engine: Engine | None = None
        self.failure: str | None = None
        self.sessions = 0
        """Bidirectional sessions open now."""

        self._load_engine = load_engine
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kokoro")

    def load(self) -> None:
        try:
            engine = self._load_engine(self.settings)
            engine.warm_up()
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            log.exception("engine failed to load")
            return
        self.engine = engine

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def synthesize(self, request: protocol.Synthesize, synthesis: Synthesis, *, frame_bytes: int,
                         stopped: Callable[[], bool] = lambda: False, windowed: bool = False
                         ) -> AsyncIterator[bytes | tuple[protocol.Word, ...]]:
        """The request's PCM16 audio in frames of ``frame_bytes``, part after part as each is
        inferred, each piece's audio preceded by when its words are spoken (a tuple of words, in
        milliseconds of the request's audio; none when the model does not report durations); stops
        between parts once ``stopped()``. ``windowed``: the first piece is rendered in windows (the
        request asked for it: a listener is waiting for it). Raises :class:`SynthesisRefused`
        before any audio when the voice is unknown or the text has nothing to speak."""
        engine = self.engine
        assert engine is not None, "requests are accepted only once the engine is ready"
        try:
            voice = engine.resolve_voice(request.voice)
        except UnknownVoiceError as exc:
            raise SynthesisRefused(protocol.UNKNOWN_VOICE, str(exc)) from None
        pieces = await self.run(engine.phonemize, request.text)
        if not pieces:
            raise SynthesisRefused(protocol.EMPTY_TEXT, "the text has nothing to speak")
        synthesis.pieces, synthesis.phonemes = len(pieces), sum(len(piece.phonemes) for piece in pieces)
        for index, piece in enumerate(pieces):
            parts = engine.render(piece.phonemes, voice, request.speed, windowed=windowed and index == 0)
            piece_offset = synthesis.audio_bytes // protocol.SAMPLE_WIDTH
            while True:
                if stopped():
                    return
                (pcm, durations), took_ms = await self.run(_timed, next, parts, (None, None))
                if pcm is None:
                    break
                synthesis.inference_ms.append(took_ms)
                synthesis.windows += index == 0
                if synthesis.first_audio_ms is None:
                    synthesis.first_audio_ms = (time.perf_counter() - synthesis.received) * 1000
                if durations is not None and piece.words:
                    words = word_times(piece, durations, offset_samples=piece_offset,
                                       samples_per_frame=SAMPLES_PER_FRAME, sample_rate=protocol.SAMPLE_RATE)
                    synthesis.words += len(words)
                    yield tuple(words)
                for offset in range(0, len(pcm), frame_bytes):
                    frame = pcm[offset:offset + frame_bytes]
                    synthesis.audio_bytes += len(frame)
                    yield frame


def _timed(function: Callable[..., T], *args: Any) -> tuple[T, float]:
    """Run ``function`` and measure it where it runs (the inference thread): the model's own time,
    without the wait for the thread."""
    started = time.perf_counter()
    result = function(*args)
    return result, (time.perf_counter() - started) * 1000
