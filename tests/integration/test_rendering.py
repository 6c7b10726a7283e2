"""Rendering in windows with the real model: the windows join into an utterance of the whole
render's length with the same word timings, and the server renders in windows exactly the requests
that ask, the same way every time; an utterance keeps only ``LEAD_MS`` of the silence the model
puts before it, rendered whole or in windows, split or not. What the recogniser hears of the
windows against the whole render is checked by the engine benchmark's run in
``tests/integration/test_bench.py`` (six sentences; the full run, fifty)."""

from __future__ import annotations

import numpy as np
import pytest

from agent.tts_client import TTSSession
from tts_protocol import SAMPLE_RATE, speech_onset
from tts_server import engine as engine_module
from tts_server.engine import KokoroEngine, float_to_pcm16
from tts_server.model_files import SAMPLES_PER_FRAME, ModelFileError
from tts_server.rendering import FRAME_MS, LEAD_MS

TWO_SENTENCES = "The birch canoe slid on the smooth planks, and the boy was there when the sun rose over the hills."


def test_windows_join_into_an_utterance_as_long_as_the_whole_render_with_its_durations(engine: KokoroEngine):
    phonemes = engine.phonemize(TWO_SENTENCES)[0].phonemes
    feeds = engine.feeds(phonemes, engine.default_voice)
    whole = float_to_pcm16(engine.renderer.decode(engine.renderer.predict(feeds)))
    parts = list(engine.render(phonemes, engine.default_voice, windowed=True))
    assert len(parts) >= 3, "a 5 s utterance is rendered in a first window and then growing ones"
    durations = parts[0][1]
    assert durations == engine.renderer.predict(feeds).durations, "the same lead as the whole render"
    assert all(part_durations is None for _, part_durations in parts[1:])
    joined = b"".join(pcm for pcm, _ in parts)
    assert len(joined) == len(whole) == sum(durations) * 600 * 2
    loudness = [np.sqrt(np.mean(np.frombuffer(pcm, dtype="<i2").astype(np.float32) ** 2)) for pcm in (joined, whole)]
    assert 0.5 < loudness[0] / loudness[1] < 2


async def test_the_server_renders_in_windows_the_requests_that_ask_and_the_same_way_every_time(tts_server):
    async with TTSSession(tts_server.ws_url) as tts:
        streams = [await tts.synthesize(TWO_SENTENCES, windows=True), await tts.synthesize(TWO_SENTENCES),
                   await tts.synthesize(TWO_SENTENCES, windows=True)]
        audio = [b"".join([chunk async for chunk in stream]) for stream in streams]
    windowed, whole, again = streams
    assert windowed.stats["windows"] > 1 and whole.stats["windows"] == 1
    assert (len(audio[0]), len(audio[1])) == (windowed.stats["audio_bytes"], whole.stats["audio_bytes"])
    assert len(audio[0]) == len(audio[1]), "both keep 150 ms of the model's 0.45-0.5 s of leading silence"
    assert [word.start_ms for word in windowed.words] == pytest.approx(
        [word.start_ms for word in whole.words], abs=1), "the words are where they are spoken"
    assert onset_ms(audio[0]) <= LEAD_MS and onset_ms(audio[1]) <= LEAD_MS
    assert audio[2] == audio[0], "rendered again (as after a reconnection), the windows give the same bytes"
    assert audio[0] != audio[1]



def onset_ms(pcm: bytes) -> float:
    onset = speech_onset(pcm)
    assert onset is not None, "no speech in the audio"
    return onset * 1000 / SAMPLE_RATE


@pytest.mark.parametrize("text", ["Great question!", "Sure.", TWO_SENTENCES])
def test_an_utterance_keeps_only_the_lead_of_silence_asked_for_and_its_words_stay_on_its_audio(engine, text):
    phonemes = engine.phonemize(text)[0].phonemes
    feeds = engine.feeds(phonemes, engine.default_voice)
    model = engine.renderer.predict(feeds, trim=False)
    pcm, durations = engine.infer(phonemes, engine.default_voice)
    untrimmed = float_to_pcm16(engine.renderer.decode(model))
    assert model.durations[0] >= 16, "the model puts 0.4 s or more of silence before the first phoneme"
    assert onset_ms(untrimmed) >= 300
    assert durations[0] == round(LEAD_MS / FRAME_MS) and durations[1:] == model.durations[1:]
    assert len(pcm) == len(untrimmed) - (model.durations[0] - durations[0]) * SAMPLES_PER_FRAME * 2
    assert 25 <= onset_ms(pcm) <= LEAD_MS, "the onset is kept whole and nothing silent is left before it"
    words = engine.synthesize_timed(text)[1]
    assert words[0].start_ms <= LEAD_MS + 100
    windowed = list(engine.render(phonemes, engine.default_voice, windowed=True))
    assert windowed[0][1] == durations, "rendered in windows, the same lead"
    assert len(b"".join(pcm for pcm, _ in windowed)) == len(pcm) and 25 <= onset_ms(windowed[0][0]) <= LEAD_MS


def test_a_model_served_whole_keeps_the_same_lead(monkeypatch):
    def unsplittable(path):
        raise ModelFileError("no decoder inputs in this export")

    monkeypatch.setattr(engine_module, "split_at_decoder", unsplittable)
    whole = KokoroEngine.load(threads=2)
    assert whole.renderer is None
    pcm, durations = whole.infer(whole.phonemize("Great question!")[0].phonemes, whole.default_voice)
    assert durations[0] == round(LEAD_MS / FRAME_MS) and len(pcm) == sum(durations) * SAMPLES_PER_FRAME * 2
    assert 25 <= onset_ms(pcm) <= LEAD_MS
