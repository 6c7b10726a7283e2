"""Rendering one utterance in windows, so its first audio leaves before the whole of it is rendered.

Kokoro predicts an utterance's durations, pitch and energy in one cheap pass (3-7% of the time),
then its decoder renders the audio (93-96%). The decoder's time scales with the frames it is given,
so :class:`Renderer` predicts the whole utterance once (its prosody is the one-shot render's: no
phrase-final fall or extra silence at a cut, unlike sending a shorter first chunk) and then runs
the decoder on consecutive windows of the frames:

- each window is decoded with ``LEFT_CONTEXT_FRAMES`` of the frames before it and
  ``RIGHT_CONTEXT_FRAMES`` after it (the decoder's convolutions see past its edges, and its end is
  rendered as an utterance's end) and only its own frames are kept;
- the harmonic source carries on: a window gets the phase the whole utterance has reached at its
  start (``model_files.PHASE_OFFSET_INPUT``), so its harmonics continue those before it;
- neighbouring windows overlap by ``CROSSFADE_SAMPLES`` and are crossfaded, and each cut is put on
  the quietest frame (lowest predicted energy) near where it is due;
- the first window is ``FIRST_WINDOW_FRAMES`` long; each next one is as long as a decoder of
  ``PLANNED_MS_PER_FRAME`` decodes (with its context) in ``HEADROOM`` of the audio a listener who
  started at the first audio has not heard yet, so the audio stays ahead of real-time playback.

The windows are planned from the utterance alone (:func:`plan`), never from the clock: a request
rendered again (sent again after a reconnection, which skips the audio already delivered) gives
the same audio byte for byte.

What it does not carry: the decoder's instance normalisations average over the frames they are
given, so a window is normalised over itself and its context, not the whole utterance. Its audio is
therefore not the one-shot render's sample for sample; ``bench engine`` measures what that costs
(seams, word error rate against the one-shot render). The audio has exactly the one-shot render's
length, ``frames x SAMPLES_PER_FRAME``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tts_protocol import SAMPLE_RATE
from tts_server import settings
from tts_server.model_files import DURATIONS_OUTPUT, PHASE_OFFSET_INPUT, PREDICTION_OUTPUTS, SAMPLES_PER_FRAME

FIRST_WINDOW_FRAMES = 28
"""The first window: 0.7 s of audio, decoded (with its right context, 38 frames) in about 250 ms
here; the shortest that lets the shortest next window (with its context) decode, at
``PLANNED_MS_PER_FRAME``, in ``HEADROOM`` of the time it plays. ``bench engine`` (50 Harvard
sentences, 2026-12-03): log-spectral distance to the whole render 4.54 dB with 28 frames, 4.85 with
24, 5.93 with 20: a shorter first window is normalised over too few frames."""
LEFT_CONTEXT_FRAMES = 30
"""Frames decoded before a window and then dropped (0.75 s). ``bench engine`` (50 Harvard sentences,
2026-12-03; whole render: word error rate 0.060): with 30, 0.042 and 4.54 dB from the whole render's
spectrum; with 20, 0.063 and 4.89 dB (an exploration run: 15 frames, 0.081)."""
RIGHT_CONTEXT_FRAMES = 10
"""Frames decoded after a window and then dropped (0.25 s): what comes after a cut matters less
than what comes before it. ``bench engine`` (as above): with 30, 0.052 and 4.36 dB, first audio 84 ms
later; with 10, 0.042 and 4.54 dB; with 5, 0.060 and 4.94 dB. Each frame less here is a frame less
to decode before first audio."""
CROSSFADE_SAMPLES = 480
"""Overlap of neighbouring windows (20 ms), joined with a linear crossfade."""
HEADROOM = 0.8
"""A window may take this share of the audio not yet played to decode."""
PLANNED_MS_PER_FRAME = 7.0
"""The decoder speed windows are planned for, in milliseconds per 25 ms frame given (context
included): this machine's 2 cores measure 5-6.5 on windows of 60-150 frames, so the plan keeps some
in reserve. A slower decoder (another request rendering beside it, a slower machine) may run out
between windows; ``bench agent``'s listener simulation counts it."""
MIN_WINDOW_FRAMES = 40
"""No later window is shorter (1 s): a shorter one spends most of its time on its context and
plays out before the next is ready. When what would be left after a window is shorter than this,
the window takes it too."""
CUT_SEARCH_FRAMES = 6
"""A cut moves up to this many frames earlier, to the quietest frame."""
LEAD_MS = settings.LEAD_MS
"""The leading silence an utterance keeps before its first phoneme. Kokoro gives the padding token
before it 18-20 frames (0.45-0.5 s, measured on this project's sentences), rendered as silence
(below -70 dBFS) until 3-5 frames before the first phoneme, where its onset starts. Rendered
sentence by sentence, that silence would come before every sentence, on top of the pause the
sentence before it ends with, and before the answer's first speech. 150 ms keeps the onset whole
(``bench engine``, 50 Harvard sentences: speech starts 125 ms in, p50, max 160, against 430).
Rendered whole, the frames before it are not decoded (word error rate 0.042, against 0.060 with the
model's silence; Kokoro-FastAPI trims the same silence and pads 50 ms). Rendered in windows, they are
decoded as the first window's context and not played (:meth:`Prediction.lead` with ``context``): a
first window normalised over speech alone is heard worse. ``bench engine`` on 147 Harvard sentences
held out from those (``bench.harvard.HELD_OUT``, 1,158 words), 2026-12-03: word error rate 0.068 so,
0.065 playing the model's silence, 0.090 with the frames not decoded at all (0.099 with a first window
of 36 frames, an exploration run); whole, 0.066 with 150 ms and 0.059 with the model's silence.
Decoding those 12-14 frames costs 55-75 ms before the first audio; the first speech comes ~240 ms
sooner (501 against 742 ms p50 from the phonemes)."""

FEATURES, PITCH, ENERGY = PREDICTION_OUTPUTS
FRAME_MS = SAMPLES_PER_FRAME * 1000 / SAMPLE_RATE


def lead_frames(lead_ms: int | None) -> int | None:
    """Frames of leading silence kept for ``lead_ms`` (None: all of the model's)."""
    return None if lead_ms is None else round(lead_ms / FRAME_MS)


def lead_cut(durations: list[float], kept: int | None) -> int:
    """Frames cut from the start of an utterance of ``durations`` that keeps ``kept`` frames of its
    leading padding (None: all of it)."""
    return 0 if kept is None else max(0, int(durations[0]) - kept)


@dataclass
class Prediction:
    """One utterance's predicted decoder inputs. Its audio is frames ``[start, frames)``: the
    frames before ``start`` are decoded as the first window's context and not played."""

    inputs: dict[str, np.ndarray]
    durations: list[float]
    start: int = 0

    @property
    def frames(self) -> int:
        return int(self.inputs[FEATURES].shape[2])

    def lead(self, frames: int | None, *, context: bool = False) -> Prediction:
        """The utterance with at most ``frames`` of its leading padding (``None``: all of it, as
        predicted). The frames before them are dropped or (``context``) kept as frames decoded
        but not played; either way the padding's duration is shortened, so the durations add up
        to the audio (word timings stay on it)."""
        cut = lead_cut(self.durations, frames) if not self.start else 0
        if not cut:
            return self
        cut_lead = Prediction(self.inputs, [self.durations[0] - cut, *self.durations[1:]], cut)
        return cut_lead if context else cut_lead.played()

    def played(self) -> Prediction:
        """The utterance without the frames before ``start`` (not decoded at all)."""
        if not self.start:
            return self
        cut = self.start
        inputs = {**self.inputs, FEATURES: self.inputs[FEATURES][:, :, cut:],
                  PITCH: self.inputs[PITCH][:, 2 * cut:], ENERGY: self.inputs[ENERGY][:, 2 * cut:]}
        return Prediction(inputs, self.durations)

    def window(self, start: int, end: int, phase: np.ndarray | None) -> dict[str, np.ndarray]:
        """The decoder's inputs for frames ``[start, end)``, the harmonic source starting at the
        phase the utterance has reached at ``start`` (``phase``: its running phase, or None)."""
        if start == 0 or phase is None:  # one zero, broadcast over the harmonics: the model's own phase
            return self._window(start, end, np.zeros((1, 1, 1), dtype=np.float32))
        return self._window(start, end, np.mod(phase[:, 2 * start - 1:2 * start, :], 1.0).astype(np.float32))

    def _window(self, start: int, end: int, offset: np.ndarray) -> dict[str, np.ndarray]:
        return {FEATURES: np.ascontiguousarray(self.inputs[FEATURES][:, :, start:end]),
                PITCH: np.ascontiguousarray(self.inputs[PITCH][:, 2 * start:2 * end]),
                ENERGY: np.ascontiguousarray(self.inputs[ENERGY][:, 2 * start:2 * end]),
                "style": self.inputs["style"], PHASE_OFFSET_INPUT: offset}

    def quietest(self, start: int, end: int) -> int:
        """The frame in ``[start, end)`` with the lowest predicted energy (the latest of equals)."""
        energy = self.inputs[ENERGY].reshape(-1)[2 * start:2 * end].reshape(-1, 2).mean(axis=1)
        return start + int(len(energy) - 1 - np.argmin(energy[::-1]))


@dataclass(frozen=True)
class Shape:
    """How long the first window is and how much context each window is decoded with, in frames
    (``bench engine`` measures other shapes against this one)."""

    first: int = FIRST_WINDOW_FRAMES
    left: int = LEFT_CONTEXT_FRAMES
    right: int = RIGHT_CONTEXT_FRAMES

    @property
    def context(self) -> int:
        return self.left + self.right


SHAPE = Shape()
"""The shape the server renders in."""


def shortest_window(ms_per_frame: float = PLANNED_MS_PER_FRAME, shape: Shape = SHAPE) -> int:
    """The shortest window worth decoding: ``MIN_WINDOW_FRAMES``, or longer when a window that short
    (with its context) would take a decoder of ``ms_per_frame`` more than ``HEADROOM`` of the time it
    plays."""
    if ms_per_frame >= HEADROOM * FRAME_MS:
        raise ValueError(f"a decoder of {ms_per_frame} ms per {FRAME_MS:g} ms frame cannot keep ahead in windows")
    needed = shape.context * ms_per_frame / (HEADROOM * FRAME_MS - ms_per_frame)
    return max(MIN_WINDOW_FRAMES, int(np.ceil(needed)))


def next_window(remaining: int, budget_ms: float, ms_per_frame: float, shortest: int = MIN_WINDOW_FRAMES,
                shape: Shape = SHAPE) -> int:
    """Frames the next window should cover: as many as its decoder time (own frames and context)
    fits in ``budget_ms``, at least ``shortest``. When that would leave less than ``shortest``
    after it: all ``remaining`` if they fit the budget (the last window has no right context), else
    two windows of what is left, the later at most ``shortest`` (so the next part is ready sooner)."""
    fits = int(budget_ms / ms_per_frame) - shape.context
    frames = max(shortest, fits)
    if remaining - frames >= shortest:
        return frames
    if remaining <= fits + shape.right:
        return remaining
    return max(remaining - shortest, (remaining + 1) // 2)


def plan(prediction: Prediction, ms_per_frame: float = PLANNED_MS_PER_FRAME,
         shape: Shape = SHAPE) -> list[tuple[int, int]]:
    """The windows ``(start, end)`` an utterance is rendered in: the first ``shape.first`` frames from
    ``prediction.start``, then each as long as a decoder of ``ms_per_frame`` decodes in ``HEADROOM``
    of the audio not yet played, every cut moved to the quietest frame up to ``CUT_SEARCH_FRAMES``
    before it is due. One window when the utterance is too short to be worth cutting."""
    frames, shortest = prediction.frames, shortest_window(ms_per_frame, shape)
    if frames - prediction.start < shape.first + MIN_WINDOW_FRAMES // 2:
        return [(prediction.start, frames)]
    windows: list[tuple[int, int]] = []
    start, planned, decoding_ms, audio_ms = prediction.start, shape.first, 0.0, 0.0
    while start < frames:
        end = frames if planned >= frames - start else prediction.quietest(
            start + planned - CUT_SEARCH_FRAMES, start + planned + 1)
        if windows:  # the first window's decoding comes before any audio: it is not played over
            decoded = min(frames, end + shape.right) - max(0, start - shape.left)
            decoding_ms += ms_per_frame * decoded
        windows.append((start, end))
        audio_ms += (end - start) * FRAME_MS
        start, planned = end, next_window(frames - end, HEADROOM * (audio_ms - decoding_ms), ms_per_frame, shortest,
                                          shape)
    return windows


class Renderer:
    """Kokoro split at its decoder (``model_files.split_at_decoder``): ``predict`` then ``render``.
    ``lead_frames``: the leading silence an utterance keeps (:meth:`Prediction.lead`)."""

    def __init__(self, prediction: object, decoder: object, phase: object,
                 lead_frames: int | None = lead_frames(LEAD_MS)) -> None:
        self._prediction, self._decoder, self._phase = prediction, decoder, phase
        self.lead_frames = lead_frames

    @property
    def decoder(self) -> object:
        """The decoder's session (where nearly all the time goes)."""
        return self._decoder

    def predict(self, feeds: dict[str, np.ndarray], *, trim: bool = True, windowed: bool = False) -> Prediction:
        """The utterance's decoder inputs, its leading silence (``trim``) cut to ``lead_frames``: the
        frames before not decoded, or (``windowed``) decoded as the first window's context and not
        played (``LEAD_MS`` says why)."""
        *outputs, durations = self._prediction.run([*PREDICTION_OUTPUTS, DURATIONS_OUTPUT], feeds)  # type: ignore[attr-defined]
        prediction = Prediction({**dict(zip(PREDICTION_OUTPUTS, outputs, strict=True)), "style": feeds["style"]},
                                np.asarray(durations).ravel().tolist())
        return prediction.lead(self.lead_frames, context=windowed) if trim else prediction

    def decode(self, prediction: Prediction, start: int = 0, end: int | None = None,
               phase: np.ndarray | None = None) -> np.ndarray:
        """float32 audio of frames ``[start, end)`` (all by default) decoded alone."""
        end = prediction.frames if end is None else end
        return self._decoder.run(["audio"], prediction.window(start, end, phase))[0].ravel()  # type: ignore[attr-defined]

    def windows(self, prediction: Prediction, *, windowed: bool,
                shape: Shape = SHAPE) -> Iterator[tuple[int, int, int, dict[str, np.ndarray]]]:
        """What :meth:`render` decodes, in order: each window's ``(start, end, low)`` (its frames,
        and the first frame decoded with its context) and the decoder's inputs for it."""
        windows = plan(prediction, shape=shape) if windowed else [(prediction.start, prediction.frames)]
        if len(windows) == 1:
            played = prediction.played()
            yield prediction.start, prediction.frames, prediction.start, played.window(0, played.frames, None)
            return
        frames = prediction.frames
        phase = self._phase.run(None, {PITCH: prediction.inputs[PITCH]})[0]  # type: ignore[attr-defined]
        for start, end in windows:
            low, high = max(0, start - shape.left), min(frames, end + shape.right)
            yield start, end, low, prediction.window(low, high, phase)

    def render(self, prediction: Prediction, *, windowed: bool, shape: Shape = SHAPE) -> Iterator[np.ndarray]:
        """The utterance's float32 audio: whole in one part, or (``windowed``) window by window as
        :func:`plan` has it, each part as soon as it is decoded. The parts joined are ``(frames -
        start) x SAMPLES_PER_FRAME`` samples."""
        frames, first, half = prediction.frames, prediction.start, CROSSFADE_SAMPLES // 2
        tail = np.zeros(0, dtype=np.float32)
        for start, end, low, feeds in self.windows(prediction, windowed=windowed, shape=shape):
            audio = self._decoder.run(["audio"], feeds)[0].ravel()  # type: ignore[attr-defined]
            if start == first and end == frames:
                yield audio
                return
            # Keep [start - half, end + half) of this window (no overlap before the first or after the last).
            keep = audio[(start - low) * SAMPLES_PER_FRAME - (half if start > first else 0):
                         (end - low) * SAMPLES_PER_FRAME + (half if end < frames else 0)]
            if tail.size:
                fade = np.linspace(0.0, 1.0, tail.size + 2, dtype=np.float32)[1:-1]
                keep = np.concatenate([tail * (1.0 - fade) + keep[:tail.size] * fade, keep[tail.size:]])
            part, tail = (keep, keep[:0]) if end == frames else (keep[:-CROSSFADE_SAMPLES], keep[-CROSSFADE_SAMPLES:])
            yield part
