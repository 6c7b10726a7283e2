"""Where the engine's time goes, and what rendering in windows costs.

The model is split at its decoder's inputs (``model_files.split_at_decoder``: prediction, then
decoder; their audio is the whole model's, bit for bit). For each first-chunk length: the time of
the prediction (text encoder, durations, pitch and energy) and of the decoder. Then the windowed
renderer (``tts_server.rendering``) against the one-shot render on the Harvard sentences: how soon
its first part is ready, what happens at its joins (spectral flux near each join beyond the one-shot
render's at the same place, and the sample step across it over the typical step there), and what
an offline recogniser hears of each render.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tts_server.model_files import file_digest
from tts_server.rendering import CROSSFADE_SAMPLES
from voice_agent.bench.tts import summarize

FLUX_WINDOW = 512
FLUX_HOP = 120
FLUX_SPAN = 480
"""Samples either side of a join (20 ms) searched for its spectral flux."""



def time_split(engine: Any, texts: dict[str, str], trials: int) -> dict[str, Any]:
    """Per text: prediction and decoder time, p50 of ``trials``."""
    renderer = engine.renderer
    results = {}
    for name, text in texts.items():
        prediction, decoder = [], []
        for _ in range(trials):
            feeds = engine.feeds(engine.phonemize(text)[0].phonemes, engine.default_voice)
            started = time.perf_counter()
            predicted = renderer.predict(feeds)
            predicted_at = time.perf_counter()
            renderer.decode(predicted)
            prediction.append((predicted_at - started) * 1000)
            decoder.append((time.perf_counter() - predicted_at) * 1000)
        p50 = summarize(prediction)["p50"], summarize(decoder)["p50"]
        results[name] = {"prediction_ms": p50[0], "decoder_ms": p50[1],
                         "decoder_share": round(p50[1] / (p50[0] + p50[1]), 3)}
    return results


def _log_spectrum(audio: np.ndarray) -> np.ndarray:
    frames = np.lib.stride_tricks.sliding_window_view(audio, FLUX_WINDOW)[::FLUX_HOP] * np.hanning(FLUX_WINDOW)
    return 10 * np.log10(np.abs(np.fft.rfft(frames, axis=1)) ** 2 + 1e-10)


def flux_near(audio: np.ndarray, sample: int) -> float:
    """Spectral flux (dB, RMS over frequency, between successive 5 ms hops of 21 ms frames), the
    largest within ``FLUX_SPAN`` samples either side of ``sample``."""
    low = max(0, sample - FLUX_SPAN - FLUX_WINDOW)
    spectrum = _log_spectrum(audio[low:sample + FLUX_SPAN + FLUX_WINDOW])
    return float(np.max(np.sqrt(np.mean(np.diff(spectrum, axis=0) ** 2, axis=1))))


def seams(engine: Any, model: Any, sentences: list[str]) -> dict[str, Any]:
    """Each sentence rendered whole and in windows as the server renders a request a listener waits
    for: time to the first part, joins, and at each join the spectral flux and the sample step
    against the one-shot render's at the same place; then what the recogniser hears of each."""
    from tts_server.engine import float_to_pcm16
    from voice_agent.bench.hearing import transcribe, word_errors, words

    renderer = engine.renderer
    first_ms, whole_ms, flux, steps, windows = [], [], [], [], []
    errors = {"whole": 0, "windows": 0}
    reference_words = 0
    for sentence in sentences:
        feeds = engine.feeds(engine.phonemize(sentence)[0].phonemes, engine.default_voice)
        started = time.perf_counter()
        whole = renderer.decode(renderer.predict(feeds))
        whole_ms.append((time.perf_counter() - started) * 1000)
        started, parts = time.perf_counter(), []
        for part in renderer.render(renderer.predict(feeds), windowed=True):
            if not parts:
                first_ms.append((time.perf_counter() - started) * 1000)
            parts.append(part)
        joined = np.concatenate(parts)
        if joined.size != whole.size:
            raise AssertionError(f"windows gave {joined.size} samples, the whole render {whole.size}: {sentence!r}")
        windows.append(len(parts))
        for join in np.cumsum([part.size for part in parts[:-1]]) + CROSSFADE_SAMPLES // 2:
            flux.append(flux_near(joined, int(join)) - flux_near(whole, int(join)))
            step = abs(float(joined[join] - joined[join - 1]))
            typical = float(np.median(np.abs(np.diff(whole[join - FLUX_SPAN:join + FLUX_SPAN])))) or 1e-6
            steps.append(step / typical)
        reference = words(sentence)
        reference_words += len(reference)
        for name, audio in (("whole", whole), ("windows", joined)):
            errors[name] += word_errors(reference, words(transcribe(model, float_to_pcm16(audio))))
    return {"sentences": len(sentences), "reference_words": reference_words,
            "first_part_ms": summarize(first_ms), "whole_ms": summarize(whole_ms),
            "windows": summarize(windows), "joins": len(flux),
            "flux_excess_db": summarize(flux), "step_over_typical": summarize(steps),
            "wer": {name: round(count / reference_words, 3) for name, count in errors.items()}}


def markdown(results: dict[str, Any]) -> str:
    split, seam = results["split"], results["seams"]
    rows = ["| first chunk | prediction | decoder | decoder's share |", "|---|---|---|---|"]
    rows += [f"| {name} words | {f['prediction_ms']:,.0f} ms | {f['decoder_ms']:,.0f} ms | {f['decoder_share']:.1%} |"
             for name, f in split.items()]
    rows += ["", f"Rendered in windows ({seam['sentences']} Harvard sentences, each whole and in windows; "
                 f"{seam['joins']} joins):", "",
             "| | in windows | whole |", "|---|---|---|",
             f"| first audio, p50 / p95 | {seam['first_part_ms']['p50']:,.0f} / {seam['first_part_ms']['p95']:,.0f} ms "
             f"| {seam['whole_ms']['p50']:,.0f} / {seam['whole_ms']['p95']:,.0f} ms |",
             f"| word error rate ({seam['reference_words']} words) | {seam['wer']['windows']} "
             f"| {seam['wer']['whole']} |",
             f"| windows per sentence, p50 | {seam['windows']['p50']:g} | 1 |", "",
             f"At the joins: spectral flux above the whole render's at the same place p50 "
             f"{seam['flux_excess_db']['p50']:+.1f} dB, p95 {seam['flux_excess_db']['p95']:+.1f} dB; the sample step "
             f"across a join over the typical step there p50 {seam['step_over_typical']['p50']:.2f}, "
             f"p95 {seam['step_over_typical']['p95']:.2f}."]
    return "\n".join(["Where the time goes (the model split at its decoder's inputs; digests: " +
                      ", ".join(f"`{name}` {digest[:12]}..." for name, digest in results["digests"].items()) + "):",
                      "", *rows])


def measure(engine: Any, model: Any, texts: dict[str, str], sentences: list[str], trials: int) -> dict[str, Any]:
    from tts_server.model_files import model_path, split_at_decoder

    return {"digests": {path.name: file_digest(path) for path in split_at_decoder(model_path())},
            "split": time_split(engine, texts, trials), "seams": seams(engine, model, sentences)}
