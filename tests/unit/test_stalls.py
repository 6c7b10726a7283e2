"""The playback simulation: a listener who starts at the first audio and plays at real time hears
silence exactly when the next audio arrives after everything received has been played."""

from __future__ import annotations

import pytest

from voice_agent.bench.stalls import Playback, of_answer, simulate
from voice_agent.caller import Answer


def test_audio_that_arrives_before_the_listener_runs_out_never_stalls():
    # 1 s of audio at 100 ms, then more at 600 ms and 1,100 ms: always in time
    assert simulate([(100, 1000), (600, 1000), (1100, 500)]) == Playback(0, 0.0, 0.0, 2500.0)


def test_a_late_arrival_inserts_exactly_the_gap_and_playback_resumes_from_it():
    # 500 ms played from 0 to 500; the next arrives at 800 (300 ms of silence), plays to 1,300;
    # the third arrives at 1,250, in time; the fourth at 2,000 (1,300 + 400 = 1,700: 300 ms late)
    playback = simulate([(0, 500), (800, 500), (1250, 400), (2000, 100)])
    assert playback == Playback(underruns=2, silence_ms=600.0, longest_ms=300.0, audio_ms=1500.0)


def test_a_gap_within_the_clock_tolerance_is_not_an_underrun():
    assert simulate([(0, 100), (100.8, 100)]).underruns == 0
    assert simulate([(0, 100), (101.5, 100)]).underruns == 1


def test_no_audio_is_no_playback():
    assert simulate([]) == Playback(0, 0.0, 0.0, 0.0)


def test_an_answers_durations_come_from_its_pcm16_bytes():
    answer = Answer(mode="incremental", sample_rate=24_000)
    answer.audio_arrivals = [(1000.0, 48_000), (1500.0, 24_000), (2600.0, 4_800)]  # 1 s, 0.5 s, 0.1 s
    assert of_answer(answer) == Playback(underruns=1, silence_ms=100.0, longest_ms=100.0, audio_ms=1600.0)


def test_only_pcm16_can_be_timed_by_its_bytes():
    with pytest.raises(ValueError, match="pcm16"):
        of_answer(Answer(mode="incremental", format="mp3"))
