"""Rendering one utterance in windows, so its first audio leaves before the whole of it is rendered.

Kokoro predicts an utterance's durations, pitch and energy in one cheap pass (3-7% of the time),
then its decoder renders the audio (93-96%). The decoder's time scales with the frames it is given,
so :class:`Renderer` predicts the whole utterance once (its prosody is the one-shot render's: no
phrase-final fall or extra silence at a cut, unlike sending a shorter first chunk) and then runs
the decoder on consecutive windows of the frames:

- each window is decoded with ``CONTEXT_FRAMES`` of the frames on either side (the decoder's
  convolutions see past its edges, and its end is rendered as an utterance's end) and only its own
  frames are kept;
- the harmonic source carries on: a window gets the phase the whole utterance has reached at its
  start (``model_files.PHASE_OFFSET_INPUT``), so its harmonics continue those before it;
- neighbouring windows overlap by ``CROSSFADE_SAMPLES`` and are crossfaded, and each cut is put on
  the quietest frame (lowest predicted energy) near where it is due;
- the first window is ``FIRST_WINDOW_FRAMES`` long, or longer on a decoder too slow for the
  shortest next window to be ready before it has played (the renderer keeps its decoder's speed,
  measured on every render of ``MIN_WINDOW_FRAMES`` or more); each next one is as long as can be decoded in
  ``HEADROOM`` of the audio a listener who started at the first audio has not heard yet (measured
  on the clock while rendering, at the decoder's speed measured on the window before), so the
  audio stays ahead of real-time playback on a machine of any speed.

What it does not carry: the decoder's instance normalisations average over the frames they are
given, so a window is normalised over itself and its context, not the whole utterance. Its audio is
therefore not the one-shot render's sample for sample; ``bench engine`` measures what that costs
(seams, word error rate against the one-shot render). The audio has exactly the one-shot render's
length, ``frames x SAMPLES_PER_FRAME``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from tts_protocol import SAMPLE_RATE
from tts_server.model_files import DURATIONS_OUTPUT, PHASE_OFFSET_INPUT, PREDICTION_OUTPUTS, SAMPLES_PER_FRAME

FIRST_WINDOW_FRAMES = 32
"""The first window: 0.8 s of audio, decoded (with its context) in about a third of the one-shot
time of a 4 s utterance; long enough that the next window fits in the time it plays."""
CONTEXT_FRAMES = 30
"""Frames decoded on each side of a window and then dropped (0.75 s). With 20 the recogniser heard
the 50 Harvard sentences rendered in windows at a word error rate of 0.073 against the whole
render's 0.060; with 30, 0.047."""
CROSSFADE_SAMPLES = 480
"""Overlap of neighbouring windows (20 ms), joined with a linear crossfade."""
HEADROOM = 0.8
"""A window may take this share of the audio not yet played to decode."""
MIN_WINDOW_FRAMES = 40
"""No later window is shorter (1 s): a shorter one spends most of its time on its context and
plays out before the next is ready. When what would be left after a window is shorter than this,
the window takes it too."""
CUT_SEARCH_FRAMES = 6
"""A cut moves up to this many frames earlier, to the quietest frame."""

FEATURES, PITCH, ENERGY = PREDICTION_OUTPUTS
FRAME_MS = SAMPLES_PER_FRAME * 1000 / SAMPLE_RATE


@dataclass
class Prediction:
    """One utterance's predicted decoder inputs."""

    inputs: dict[str, np.ndarray]
    durations: list[float]

    @property
    def frames(self) -> int:
        return int(self.inputs[FEATURES].shape[2])

    def window(self, start: int, end: int, phase: np.ndarray | None) -> dict[str, np.ndarray]:
        """The decoder's inputs for frames ``[start, end)``, the harmonic source starting at the
        phase the utterance has reached at ``start`` (``phase``: its running phase, or None)."""
        offset = np.zeros((1, 1, 9 if phase is None else phase.shape[2]), dtype=np.float32)
        if start > 0 and phase is not None:
            offset = np.mod(phase[:, 2 * start - 1:2 * start, :], 1.0).astype(np.float32)
        return {FEATURES: np.ascontiguousarray(self.inputs[FEATURES][:, :, start:end]),
                PITCH: np.ascontiguousarray(self.inputs[PITCH][:, 2 * start:2 * end]),
                ENERGY: np.ascontiguousarray(self.inputs[ENERGY][:, 2 * start:2 * end]),
                "style": self.inputs["style"], PHASE_OFFSET_INPUT: offset}

    def quietest(self, start: int, end: int) -> int:
        """The frame in ``[start, end)`` with the lowest predicted energy (the latest of equals)."""
        energy = self.inputs[ENERGY].reshape(-1)[2 * start:2 * end].reshape(-1, 2).mean(axis=1)
        return start + int(len(energy) - 1 - np.argmin(energy[::-1]))


def shortest_window(ms_per_frame: float) -> int | None:
    """The shortest window worth decoding at ``ms_per_frame``: ``MIN_WINDOW_FRAMES``, or longer when
    a window that short (with its context) would take more than ``HEADROOM`` of the time it plays;
    None when no window is short enough to keep ahead (decode whole)."""
    if ms_per_frame >= HEADROOM * FRAME_MS:
        return None
    needed = 2 * CONTEXT_FRAMES * ms_per_frame / (HEADROOM * FRAME_MS - ms_per_frame)
    return max(MIN_WINDOW_FRAMES, int(np.ceil(needed)))


def next_window(remaining: int, budget_ms: float, ms_per_frame: float, shortest: int = MIN_WINDOW_FRAMES) -> int:
    """Frames the next window should cover: as many as its decoder time (own frames and context)
    fits in ``budget_ms``, at least ``shortest``; all ``remaining`` when what would be left after it
    is shorter than that."""
    frames = max(shortest, int(budget_ms / ms_per_frame) - 2 * CONTEXT_FRAMES)
    return remaining if remaining - frames < shortest else frames


class Renderer:
    """Kokoro split at its decoder (``model_files.split_at_decoder``): ``predict`` then ``render``."""

    def __init__(self, prediction: object, decoder: object, phase: object,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._prediction, self._decoder, self._phase = prediction, decoder, phase
        self._clock = clock
        self.ms_per_frame: float | None = None
        """The decoder's time per frame given (context included), as last measured on a decode of at
        least ``MIN_WINDOW_FRAMES``; None before one."""

    def first_window(self) -> int | None:
        """``FIRST_WINDOW_FRAMES``, or as many as the shortest next window needs to be decoded in
        ``HEADROOM`` of the time they play, at the decoder's measured speed; None when the decoder
        is too slow to keep ahead in windows."""
        if self.ms_per_frame is None:
            return FIRST_WINDOW_FRAMES
        shortest = shortest_window(self.ms_per_frame)
        if shortest is None:
            return None
        needed = self.ms_per_frame * (shortest + 2 * CONTEXT_FRAMES) / (HEADROOM * FRAME_MS)
        return max(FIRST_WINDOW_FRAMES, int(np.ceil(needed)))

    def predict(self, feeds: dict[str, np.ndarray]) -> Prediction:
        *outputs, durations = self._prediction.run([*PREDICTION_OUTPUTS, DURATIONS_OUTPUT], feeds)  # type: ignore[attr-defined]
        return Prediction({**dict(zip(PREDICTION_OUTPUTS, outputs, strict=True)), "style": feeds["style"]},
                          np.asarray(durations).ravel().tolist())

    def decode(self, prediction: Prediction, start: int = 0, end: int | None = None,
               phase: np.ndarray | None = None) -> np.ndarray:
        """float32 audio of frames ``[start, end)`` (all by default) decoded alone."""
        end = prediction.frames if end is None else end
        began = self._clock()
        audio = self._decoder.run(["audio"], prediction.window(start, end, phase))[0].ravel()  # type: ignore[attr-defined]
        if end - start >= MIN_WINDOW_FRAMES:
            self.ms_per_frame = (self._clock() - began) * 1000 / (end - start)
        return audio

    def render(self, prediction: Prediction, *, windowed: bool) -> Iterator[np.ndarray]:
        """The utterance's float32 audio: whole in one part, or (``windowed``) window by window,
        each part as soon as it is decoded. The parts joined are ``frames x SAMPLES_PER_FRAME``
        samples."""
        frames, first = prediction.frames, self.first_window()
        if not windowed or first is None or frames < first + MIN_WINDOW_FRAMES // 2:
            yield self.decode(prediction)
            return
        phase = self._phase.run(None, {PITCH: prediction.inputs[PITCH]})[0]  # type: ignore[attr-defined]
        half = CROSSFADE_SAMPLES // 2
        start, planned, tail = 0, first, np.zeros(0, dtype=np.float32)
        first_sent, sent_samples = 0.0, 0
        while start < frames:
            end = frames if planned >= frames - start else prediction.quietest(
                start + planned - CUT_SEARCH_FRAMES, start + planned + 1)
            low, high = max(0, start - CONTEXT_FRAMES), min(frames, end + CONTEXT_FRAMES)
            audio = self.decode(prediction, low, high, phase)
            # Keep [start - half, end + half) of this window (no overlap before the first or after the last).
            keep = audio[(start - low) * SAMPLES_PER_FRAME - (half if start else 0):
                         (end - low) * SAMPLES_PER_FRAME + (half if end < frames else 0)]
            if tail.size:
                fade = np.linspace(0.0, 1.0, tail.size + 2, dtype=np.float32)[1:-1]
                keep = np.concatenate([tail * (1.0 - fade) + keep[:tail.size] * fade, keep[tail.size:]])
            part, tail = (keep, keep[:0]) if end == frames else (keep[:-CROSSFADE_SAMPLES], keep[-CROSSFADE_SAMPLES:])
            yield part
            now = self._clock()
            if not sent_samples:
                first_sent = now
            sent_samples += part.size
            unplayed_ms = sent_samples * 1000 / SAMPLE_RATE - (now - first_sent) * 1000
            speed = self.ms_per_frame or FRAME_MS / 4
            start, planned = end, next_window(frames - end, HEADROOM * unplayed_ms, speed,
                                              shortest_window(speed) or frames)
