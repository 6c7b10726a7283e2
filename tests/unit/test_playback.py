"""The caller's playback clock: where a listener is in an answer, as a player plays it."""

from __future__ import annotations

import pytest

from voice_agent import playback


@pytest.fixture
def now(monkeypatch):
    clock = {"t": 100.0}
    monkeypatch.setattr(playback.time, "monotonic", lambda: clock["t"])
    return clock


def test_the_playhead_moves_in_real_time_from_the_first_audio(now):
    clock = playback.PlaybackClock()
    clock.received(1_000)
    assert clock.played_ms() == 0.0, "nothing played before the player got audio"
    clock.start()
    now["t"] += 0.4
    assert clock.played_ms() == 400.0


def test_the_playhead_waits_at_the_end_of_the_audio_received_and_goes_on_when_more_arrives(now):
    clock = playback.PlaybackClock()
    clock.start()
    clock.received(500)
    now["t"] += 2.0
    assert clock.played_ms() == 500.0, "an underrun: it cannot play what has not arrived"
    clock.received(1_500)
    now["t"] += 0.25
    assert clock.played_ms() == 750.0, "it resumes from where it waited"


def test_a_stopped_playhead_stays_where_the_listener_stopped(now):
    clock = playback.PlaybackClock()
    clock.start()
    clock.received(5_000)
    now["t"] += 1.2
    assert clock.stop() == 1_200.0
    now["t"] += 3.0
    assert clock.played_ms() == 1_200.0
