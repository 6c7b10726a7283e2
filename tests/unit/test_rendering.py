"""The windowed renderer's arithmetic, with a fake decoder at its boundary (the ONNX sessions): where
each window is cut and joined, what phase it starts at, and how it keeps ahead of a listener on a
clock the fake decoder advances. The real decoder's windows are measured by
``tests/integration/test_rendering.py`` and ``bench engine``."""

from __future__ import annotations

import numpy as np
import pytest

from tts_server.model_files import PHASE_OFFSET_INPUT, SAMPLES_PER_FRAME
from tts_server.rendering import (
    CROSSFADE_SAMPLES,
    CUT_SEARCH_FRAMES,
    ENERGY,
    FEATURES,
    FIRST_WINDOW_FRAMES,
    LEFT_CONTEXT_FRAMES,
    MIN_WINDOW_FRAMES,
    PITCH,
    PLANNED_MS_PER_FRAME,
    RIGHT_CONTEXT_FRAMES,
    Prediction,
    Renderer,
    Shape,
    next_window,
    plan,
    shortest_window,
)

HARMONICS = 9


class Clock:
    def __init__(self) -> None:
        self.now = 0.0


class FrameIndexDecoder:
    """Audio whose every sample is the utterance frame it belongs to (so a window shifted by one
    sample shows), taking ``ms_per_frame`` on the fake clock per frame decoded."""

    def __init__(self, clock: Clock, ms_per_frame: float) -> None:
        self.clock, self.ms_per_frame = clock, ms_per_frame
        self.windows: list[tuple[int, int, np.ndarray]] = []

    def run(self, names, feeds):
        frames = feeds[FEATURES].shape[2]
        start = int(feeds[FEATURES][0, 0, 0])  # the fake features carry their frame index
        self.windows.append((start, start + frames, feeds[PHASE_OFFSET_INPUT]))
        self.clock.now += frames * self.ms_per_frame / 1000
        return [np.repeat(np.arange(start, start + frames, dtype=np.float32), SAMPLES_PER_FRAME)[None, :]]


class RunningPhase:
    def run(self, names, feeds):
        steps = feeds[PITCH].shape[1]
        return [np.cumsum(np.full((1, steps, HARMONICS), 0.37, dtype=np.float32), axis=1)]


def prediction(frames: int, quiet: tuple[int, ...] = (), pad: float = 1.0) -> Prediction:
    """``frames`` whose features carry their index; the first token (the leading padding) ``pad`` long."""
    features = np.broadcast_to(np.arange(frames, dtype=np.float32), (1, 512, frames)).copy()
    energy = np.ones((1, 2 * frames), dtype=np.float32)
    for frame in quiet:
        energy[0, 2 * frame:2 * frame + 2] = 0.0
    return Prediction({FEATURES: features, PITCH: np.ones((1, 2 * frames), dtype=np.float32), ENERGY: energy,
                       "style": np.zeros((1, 256), dtype=np.float32)}, [pad, *[1.0] * 4])


def renderer(ms_per_frame: float = 6.0) -> tuple[Renderer, FrameIndexDecoder, Clock]:
    clock = Clock()
    decoder = FrameIndexDecoder(clock, ms_per_frame)
    return Renderer(object(), decoder, RunningPhase()), decoder, clock


@pytest.mark.parametrize("frames", [60, 140, 400, 1000])
def test_windows_join_into_the_whole_utterance_sample_for_sample(frames):
    render, decoder, _ = renderer()
    parts = list(render.render(prediction(frames), windowed=True))
    whole = np.repeat(np.arange(frames, dtype=np.float32), SAMPLES_PER_FRAME)
    assert len(parts) > 1 and len(decoder.windows) == len(parts)
    np.testing.assert_allclose(np.concatenate(parts), whole, rtol=0, atol=1e-4)  # crossfades of equal samples
    first_start, first_end, _ = decoder.windows[0]
    assert first_start == 0 and first_end == min(frames, FIRST_WINDOW_FRAMES + RIGHT_CONTEXT_FRAMES)
    assert decoder.windows[-1][1] == frames, "the last window ends with the utterance, without right context"


def test_each_window_starts_its_harmonics_at_the_phase_the_utterance_has_reached():
    render, decoder, _ = renderer()
    list(render.render(prediction(300), windowed=True))
    running = np.cumsum(np.full(600, 0.37, dtype=np.float32))
    for start, _, offset in decoder.windows:
        expected = 0.0 if start == 0 else np.mod(running[2 * start - 1], 1.0)
        assert offset.shape == ((1, 1, 1) if start == 0 else (1, 1, HARMONICS))  # a zero is broadcast
        np.testing.assert_allclose(offset, expected, atol=1e-5)


def test_a_cut_moves_to_the_quietest_frame_before_where_it_is_due():
    render, decoder, _ = renderer()
    parts = list(render.render(prediction(200, quiet=(FIRST_WINDOW_FRAMES - 4,)), windowed=True))
    assert parts[0].size == (FIRST_WINDOW_FRAMES - 4) * SAMPLES_PER_FRAME - CROSSFADE_SAMPLES // 2
    assert decoder.windows[0][1] == FIRST_WINDOW_FRAMES - 4 + RIGHT_CONTEXT_FRAMES, "context is counted from the cut"


@pytest.mark.parametrize("ms_per_frame", [3.0, 6.0, PLANNED_MS_PER_FRAME])
@pytest.mark.parametrize("quiet", [(), (FIRST_WINDOW_FRAMES - CUT_SEARCH_FRAMES, 70, 120)], ids=["as-due", "early"])
@pytest.mark.parametrize("lead", [None, 6], ids=["model-lead", "lead-as-context"])
def test_the_next_window_is_ready_before_a_listener_has_played_what_came_before(ms_per_frame, quiet, lead):
    """On a decoder as fast as planned for or faster (this machine: ~6 ms per 25 ms frame), a listener
    who starts at the first part and plays at real time never runs out, at every utterance length
    from 1 to 25 s, also when the cuts move as early as they can (the shortest first part), and when
    the leading silence cut is decoded as the first window's context."""
    for frames in range(40, 1000):
        render, _, clock = renderer(ms_per_frame)
        started, received_ms = None, 0.0
        for part in render.render(prediction(frames, quiet, pad=20.0).lead(lead, context=True), windowed=True):
            if started is None:
                started = clock.now
            else:
                played_ms = (clock.now - started) * 1000
                assert played_ms <= received_ms, f"{frames} frames: ran out {played_ms - received_ms:.0f} ms early"
            received_ms += part.size * 1000 / 24_000


def test_the_windows_are_planned_from_the_utterance_alone():
    """The same utterance is cut the same way however fast the decoder ran: rendered again (after a
    reconnection), its audio is the same, so skipping what was delivered lines up."""
    fast, slow = renderer(1.0), renderer(50.0)
    utterance = prediction(500, quiet=(33, 90))
    assert [part.size for part in fast[0].render(utterance, windowed=True)] == [
        part.size for part in slow[0].render(utterance, windowed=True)]
    assert [window[:2] for window in fast[1].windows] == [window[:2] for window in slow[1].windows]
    assert plan(utterance) == plan(utterance) and len(plan(utterance)) > 2
    assert shortest_window() == MIN_WINDOW_FRAMES
    with pytest.raises(ValueError, match="cannot keep ahead"):
        shortest_window(21.0)


def test_whole_or_short_utterances_are_one_part():
    render, decoder, _ = renderer()
    assert len(list(render.render(prediction(400), windowed=False))) == 1
    short = FIRST_WINDOW_FRAMES + MIN_WINDOW_FRAMES // 2 - 1
    (part,) = render.render(prediction(short), windowed=True)
    assert part.size == short * SAMPLES_PER_FRAME and decoder.windows[-1][:2] == (0, short)


def test_a_window_takes_what_is_left_when_it_fits_rather_than_leave_less_than_a_window():
    left = MIN_WINDOW_FRAMES * 2 - 1
    assert next_window(left, budget_ms=left + LEFT_CONTEXT_FRAMES, ms_per_frame=1.0) == left, "last: no right context"
    assert next_window(left, budget_ms=1.0, ms_per_frame=1.0) == MIN_WINDOW_FRAMES, "no time: the rest in two"
    assert next_window(MIN_WINDOW_FRAMES + 10, budget_ms=1.0, ms_per_frame=1.0) == MIN_WINDOW_FRAMES // 2 + 5
    assert next_window(1000, budget_ms=1.0, ms_per_frame=1.0) == MIN_WINDOW_FRAMES
    assert next_window(1000, budget_ms=600.0, ms_per_frame=5.0) == 120 - LEFT_CONTEXT_FRAMES - RIGHT_CONTEXT_FRAMES


def test_another_shape_cuts_and_decodes_as_it_says():
    render, decoder, _ = renderer()
    shape = Shape(first=40, left=20, right=5)
    parts = list(render.render(prediction(300), windowed=True, shape=shape))
    (_, first_end, _), (second_start, _, _) = decoder.windows[:2]
    assert first_end == 40 + 5 and second_start == 40 - 20, "first window and its context, then the left context"
    assert sum(part.size for part in parts) == 300 * SAMPLES_PER_FRAME
    assert plan(prediction(300), shape=shape)[0] == (0, 40) and plan(prediction(300))[0] == (0, FIRST_WINDOW_FRAMES)


def test_the_leading_silence_is_cut_to_the_frames_kept_and_the_durations_still_add_up():
    frames, durations = 40, [20.0, 3.0, 9.0, 7.0, 1.0]
    pitch = np.arange(2 * frames, dtype=np.float32)[None, :]
    energy = -pitch
    whole = Prediction({**prediction(frames).inputs, PITCH: pitch, ENERGY: energy}, durations)
    kept = whole.lead(6)
    assert kept.frames == 26 == sum(kept.durations) and kept.durations == [6.0, *durations[1:]]
    assert kept.inputs[FEATURES][0, 0].tolist() == list(range(14, 40)), "the frames before the last 6 of the pad go"
    assert kept.inputs[PITCH][0].tolist() == pitch[0, 28:].tolist()
    assert kept.inputs[ENERGY][0].tolist() == energy[0, 28:].tolist()
    assert whole.lead(None) is whole and whole.lead(20) is whole and whole.lead(30) is whole
    assert whole.lead(0).frames == 20 and whole.lead(0).durations[0] == 0.0


def test_a_leading_silence_cut_in_windows_is_the_first_windows_context_and_is_not_played():
    render, decoder, _ = renderer()
    utterance = prediction(300, pad=20.0).lead(6, context=True)
    assert (utterance.start, utterance.frames, utterance.durations[0]) == (14, 300, 6.0)
    assert plan(utterance)[0] == (14, 14 + FIRST_WINDOW_FRAMES)
    parts = list(render.render(utterance, windowed=True))
    np.testing.assert_allclose(np.concatenate(parts), np.repeat(np.arange(14, 300, dtype=np.float32),
                                                                SAMPLES_PER_FRAME), rtol=0, atol=1e-4)
    assert parts[0].size == FIRST_WINDOW_FRAMES * SAMPLES_PER_FRAME - CROSSFADE_SAMPLES // 2, "no fade in before it"
    first_start, first_end, offset = decoder.windows[0]
    assert (first_start, first_end) == (0, 14 + FIRST_WINDOW_FRAMES + RIGHT_CONTEXT_FRAMES), "decoded from frame 0"
    assert offset.shape == (1, 1, 1) and not offset.any(), "from frame 0, the model's own phase"
    assert decoder.windows[1][0] == 14 + FIRST_WINDOW_FRAMES - LEFT_CONTEXT_FRAMES


def test_a_short_utterance_in_windows_or_one_rendered_whole_does_not_decode_the_cut_silence():
    for frames, windowed in ((14 + FIRST_WINDOW_FRAMES + MIN_WINDOW_FRAMES // 2 - 1, True), (300, False)):
        render, decoder, _ = renderer()
        (part,) = render.render(prediction(frames, pad=20.0).lead(6, context=True), windowed=windowed)
        assert decoder.windows[0][:2] == (14, frames) and part.size == (frames - 14) * SAMPLES_PER_FRAME
    kept = prediction(300, pad=20.0).lead(6)
    assert kept.start == 0 and kept.frames == 286 and kept.played() is kept
    context = prediction(300, pad=20.0).lead(6, context=True)
    assert context.lead(6) is context and context.lead(0, context=True) is context, "a lead is cut once"
