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
from collections.abc import Callable
from typing import Any

import numpy as np

from tts_protocol import SAMPLE_RATE, speech_onset
from tts_server.model_files import SAMPLES_PER_FRAME, file_digest
from tts_server.rendering import CROSSFADE_SAMPLES, LEAD_MS, SHAPE, Shape
from voice_agent.bench.tts import summarize

FLUX_WINDOW = 512
FLUX_HOP = 120
FLUX_SPAN = 480
"""Samples either side of a join (20 ms) searched for its spectral flux."""
SPECTRUM_WINDOW = 1024
SPECTRUM_HOP = 240
"""Frames (43 ms) and hop (10 ms) of the spectra compared by :func:`distance_db`."""



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


def _log_spectrum(audio: np.ndarray, window: int = FLUX_WINDOW, hop: int = FLUX_HOP,
                  floor: float = 1e-10) -> np.ndarray:
    frames = np.lib.stride_tricks.sliding_window_view(audio, window)[::hop] * np.hanning(window)
    return 10 * np.log10(np.abs(np.fft.rfft(frames, axis=1)) ** 2 + floor)


def flux_near(audio: np.ndarray, sample: int) -> float:
    """Spectral flux (dB, RMS over frequency, between successive 5 ms hops of 21 ms frames), the
    largest within ``FLUX_SPAN`` samples either side of ``sample``."""
    low = max(0, sample - FLUX_SPAN - FLUX_WINDOW)
    spectrum = _log_spectrum(audio[low:sample + FLUX_SPAN + FLUX_WINDOW])
    return float(np.max(np.sqrt(np.mean(np.diff(spectrum, axis=0) ** 2, axis=1))))


SHAPES = (Shape(36, 30, 30), Shape(28, 30, 30), Shape(28, 20, 10), Shape(28, 30, 5), Shape(24, 30, 10),
          Shape(20, 30, 10))
"""Other window shapes measured against the server's (``bench engine``'s full run): the one before
(36 frames first, 30 of context each side), and each of first window, left and right context
shorter than the server's."""


def distance_db(audio: np.ndarray, whole: np.ndarray) -> float:
    """Mean absolute difference of the log power spectra (dB; 43 ms frames, 10 ms hop) of two renders
    of one utterance: how far the windows are from the one-shot render, silences included."""
    return float(np.mean(np.abs(_log_spectrum(audio, SPECTRUM_WINDOW, SPECTRUM_HOP, 1e-8) -
                                _log_spectrum(whole, SPECTRUM_WINDOW, SPECTRUM_HOP, 1e-8))))


Rendered = tuple[np.ndarray, list[int], float]
"""An utterance rendered: its audio, its parts' sizes, ms to its first part."""


def render_timed(renderer: Any, feeds: dict[str, np.ndarray], shape: Shape = SHAPE, *, trim: bool = True,
                 context: bool = True, windowed: bool = True) -> Rendered:
    """One utterance predicted (``trim``: keeping ``LEAD_MS`` of its leading silence; ``context``:
    the rest decoded as context) and rendered (``windowed``: in windows of ``shape``); by default as
    the server renders a request a listener waits for."""
    started, parts, first_ms = time.perf_counter(), [], 0.0
    for part in renderer.render(renderer.predict(feeds, trim=trim, windowed=context), windowed=windowed, shape=shape):
        if not parts:
            first_ms = (time.perf_counter() - started) * 1000
        parts.append(part)
    return np.concatenate(parts), [part.size for part in parts], first_ms


LEAD_VARIANTS = {"in windows, the rest decoded as context (the server)": (True, True, True),
                 "in windows, the model's silence": (False, False, True),
                 "in windows, the rest not decoded": (True, False, True),
                 "whole, 150 ms (the server)": (True, False, False),
                 "whole, the model's silence": (False, False, False)}
"""Where the leading silence goes: ``render_timed``'s ``trim``, ``context``, ``windowed``."""


def wer_heard(model: Any, references: list[list[str]]) -> Callable[[list[np.ndarray]], float]:
    """The word error rate the recogniser ``model`` hears in renders of ``references``."""
    from tts_server.engine import float_to_pcm16
    from voice_agent.bench.hearing import transcribe, word_errors, words

    total = sum(map(len, references))

    def wer(audios: list[np.ndarray]) -> float:
        return round(sum(word_errors(reference, words(transcribe(model, float_to_pcm16(audio))))
                         for audio, reference in zip(audios, references, strict=True)) / total, 3)
    return wer


def lead_variants(engine: Any, model: Any, sentences: list[str]) -> dict[str, Any]:
    """Each of ``LEAD_VARIANTS`` on ``sentences`` (held out from those the choice was made on): the
    first part's time from the phonemes, the first speech's (the first part, then where speech starts
    in the audio, played at real time), what the recogniser hears."""
    from voice_agent.bench.hearing import words

    feeds = [engine.feeds(engine.phonemize(sentence)[0].phonemes, engine.default_voice) for sentence in sentences]
    references = [words(sentence) for sentence in sentences]
    wer, variants = wer_heard(model, references), {}
    for name, (trim, context, windowed) in LEAD_VARIANTS.items():
        rendered = [render_timed(engine.renderer, fed, trim=trim, context=context, windowed=windowed) for fed in feeds]
        variants[name] = {"first_part_ms": summarize([first for _, _, first in rendered]),
                          "first_speech_ms": summarize([first + onset_ms(audio) for audio, _, first in rendered]),
                          "wer": wer([audio for audio, _, _ in rendered])}
    return {"sentences": len(sentences), "reference_words": sum(map(len, references)), "variants": variants}


def onset_ms(audio: np.ndarray) -> float:
    """Where speech starts in a render (first 10 ms at ``tts_protocol.SPEECH_DBFS``)."""
    from tts_server.engine import float_to_pcm16

    onset = speech_onset(float_to_pcm16(audio))
    if onset is None:
        raise AssertionError("a rendered sentence has no speech in it")
    return onset * 1000 / SAMPLE_RATE


def _joins(rendered: list[Rendered], wholes: list[np.ndarray]) -> dict[str, Any]:
    """At each join: spectral flux and the sample step against the one-shot render's there."""
    flux, steps = [], []
    for (joined, sizes, _), whole in zip(rendered, wholes, strict=True):
        if joined.size != whole.size:
            raise AssertionError(f"windows gave {joined.size} samples, the whole render {whole.size}")
        for join in (int(join) for join in np.cumsum(sizes[:-1]) + CROSSFADE_SAMPLES // 2):
            flux.append(flux_near(joined, join) - flux_near(whole, join))
            typical = float(np.median(np.abs(np.diff(whole[join - FLUX_SPAN:join + FLUX_SPAN])))) or 1e-6
            steps.append(abs(float(joined[join] - joined[join - 1])) / typical)
    return {"joins": len(flux), "flux_excess_db": summarize(flux), "step_over_typical": summarize(steps)}


def _lead(wholes: list[np.ndarray], models: list[np.ndarray], model_ms: list[float],
          wer: Callable[[list[np.ndarray]], float]) -> dict[str, Any]:
    """Every request keeps ``rendering.LEAD_MS`` of the model's leading silence: where speech
    starts in the renders whole (``wholes``) against the model's own (``models``, which took
    ``model_ms``), the frames not decoded, what the recogniser hears of the model's."""
    return {"kept_ms": LEAD_MS, "onset_ms": summarize([onset_ms(audio) for audio in wholes]),
            "model_onset_ms": summarize([onset_ms(audio) for audio in models]),
            "frames_not_decoded": summarize([(model.size - audio.size) / SAMPLES_PER_FRAME
                                             for model, audio in zip(models, wholes, strict=True)]),
            "model_ms": summarize(model_ms), "model_wer": wer(models)}


def seams(engine: Any, model: Any, sentences: list[str], shapes: tuple[Shape, ...] = ()) -> dict[str, Any]:
    """Each sentence rendered whole and in windows as the server renders a request a listener waits
    for: time to the first part and to the first speech in it, the joins, what the recogniser hears
    of each; the leading silence against the model's. Then the same sentences in each of
    ``shapes``: first part, distance to the whole render, word error rate."""
    from voice_agent.bench.hearing import words

    renderer = engine.renderer
    feeds = [engine.feeds(engine.phonemize(sentence)[0].phonemes, engine.default_voice) for sentence in sentences]
    references = [words(sentence) for sentence in sentences]
    reference_words, wer = sum(map(len, references)), wer_heard(model, references)

    def rendered_whole(trim: bool) -> tuple[Any, ...]:  # audios, sizes, ms; the server's or the model's
        return tuple(zip(*(render_timed(renderer, fed, trim=trim, context=False, windowed=False) for fed in feeds),
                         strict=True))

    (wholes, _, whole_ms), (models, _, model_ms) = rendered_whole(True), rendered_whole(False)

    def figures(name: str, shape: Shape, rendered: list[Rendered]) -> dict[str, Any]:
        distances = [distance_db(audio, whole) for (audio, _, _), whole in zip(rendered, wholes, strict=True)]
        return {"shape": name, "first": shape.first, "left": shape.left, "right": shape.right,
                "first_part_ms": summarize([first for _, _, first in rendered]),
                "distance_db": round(float(np.mean(distances)), 2), "wer": wer([audio for audio, _, _ in rendered])}

    rendered = [render_timed(renderer, fed, SHAPE) for fed in feeds]
    server = figures("server", SHAPE, rendered)
    speech = {"windows": summarize([first + onset_ms(audio) for audio, _, first in rendered]),
              "whole": summarize([ms + onset_ms(audio) for audio, ms in zip(wholes, whole_ms, strict=True)])}
    return {"sentences": len(sentences), "reference_words": reference_words,
            "first_part_ms": server["first_part_ms"], "whole_ms": summarize(whole_ms), "first_speech_ms": speech,
            "windows": summarize([len(sizes) for _, sizes, _ in rendered]), **_joins(rendered, wholes),
            "wer": {"whole": wer(wholes), "windows": server["wer"]}, "lead": _lead(wholes, models, model_ms, wer),
            "shapes": [server, *(figures(f"{shape.first} / {shape.left} / {shape.right}", shape,
                                         [render_timed(renderer, fed, shape) for fed in feeds]) for shape in shapes)]}


def markdown(results: dict[str, Any]) -> str:
    split, seam = results["split"], results["seams"]
    lead = seam["lead"]
    rows = ["| first chunk | prediction | decoder | decoder's share |", "|---|---|---|---|"]
    rows += [f"| {name} words | {f['prediction_ms']:,.0f} ms | {f['decoder_ms']:,.0f} ms | {f['decoder_share']:.1%} |"
             for name, f in split.items()]
    rows += ["", f"Rendered in windows ({seam['sentences']} Harvard sentences, each whole and in windows; "
                 f"{seam['joins']} joins):", "",
             "| | in windows | whole |", "|---|---|---|",
             f"| first audio, p50 / p95 | {seam['first_part_ms']['p50']:,.0f} / {seam['first_part_ms']['p95']:,.0f} ms "
             f"| {seam['whole_ms']['p50']:,.0f} / {seam['whole_ms']['p95']:,.0f} ms |",
             f"| first speech (first 10 ms at -45 dBFS), p50 | {seam['first_speech_ms']['windows']['p50']:,.0f} ms "
             f"| {seam['first_speech_ms']['whole']['p50']:,.0f} ms |",
             f"| word error rate ({seam['reference_words']} words) | {seam['wer']['windows']} "
             f"| {seam['wer']['whole']} |",
             f"| windows per sentence, p50 | {seam['windows']['p50']:g} | 1 |", "",
             f"Leading silence kept by every request: {lead['kept_ms']} ms of the model's (in windows, the rest "
             f"is decoded as the first window's context and not played). Speech starts "
             f"(first 10 ms at -45 dBFS) {lead['onset_ms']['p50']:,.0f} ms into a render whole, p50 (max "
             f"{lead['onset_ms']['max']:,.0f}); {lead['model_onset_ms']['p50']:,.0f} ms into the model's own render "
             f"(max {lead['model_onset_ms']['max']:,.0f}), whose {lead['frames_not_decoded']['p50']:g} frames more "
             f"(p50) take it from {seam['whole_ms']['p50']:,.0f} to {lead['model_ms']['p50']:,.0f} ms, p50; "
             f"word error rate {seam['wer']['whole']} with the lead kept, {lead['model_wer']} with the model's.", "",
             f"At the joins: spectral flux above the whole render's at the same place p50 "
             f"{seam['flux_excess_db']['p50']:+.1f} dB, p95 {seam['flux_excess_db']['p95']:+.1f} dB; the sample step "
             f"across a join over the typical step there p50 {seam['step_over_typical']['p50']:.2f}, "
             f"p95 {seam['step_over_typical']['p95']:.2f}."]
    if len(seam["shapes"]) > 1:
        rows += ["", "Other window shapes on the same sentences (frames: first window / context before / after; "
                     "distance: mean absolute difference of the log power spectra to the whole render):", "",
                 "| shape | first audio, p50 | distance to the whole render | word error rate |", "|---|---|---|---|"]
        rows += [f"| {shape['shape']} | {shape['first_part_ms']['p50']:,.0f} ms | {shape['distance_db']:.2f} dB "
                 f"| {shape['wer']} |" for shape in seam["shapes"]]
    if results.get("lead"):
        lead = results["lead"]
        rows += ["", f"Where the leading silence goes, on {lead['sentences']} Harvard sentences held out from those "
                     f"above ({lead['reference_words']} words); first audio and first speech from the phonemes, "
                     "speech played from the first audio at real time:", "",
                 "| rendering | first audio, p50 | first speech, p50 | word error rate |", "|---|---|---|---|"]
        rows += [f"| {name} | {f['first_part_ms']['p50']:,.0f} ms | {f['first_speech_ms']['p50']:,.0f} ms "
                 f"| {f['wer']} |" for name, f in lead["variants"].items()]
    return "\n".join(["Where the time goes (the model split at its decoder's inputs; digests: " +
                      ", ".join(f"`{name}` {digest[:12]}..." for name, digest in results["digests"].items()) + "):",
                      "", *rows])


def measure(engine: Any, model: Any, texts: dict[str, str], sentences: list[str], trials: int,
            shapes: tuple[Shape, ...] = SHAPES, held_out: list[str] | None = None) -> dict[str, Any]:
    from tts_server.model_files import model_path, split_at_decoder

    return {"digests": {path.name: file_digest(path) for path in split_at_decoder(model_path())},
            "split": time_split(engine, texts, trials), "seams": seams(engine, model, sentences, shapes),
            "lead": lead_variants(engine, model, held_out) if held_out else None}
