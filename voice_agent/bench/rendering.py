"""Where the engine's time goes, and whether the decoder could render a chunk in windows.

The model is split at its decoder's inputs (``model_files.split_at_decoder``: prediction, then
decoder; their audio is the whole model's, bit for bit). For each first-chunk length: the time of
the prediction (text encoder, durations, pitch and energy) and of the decoder. Then the question a
windowed renderer must answer first: the decoder run on only the first frames of an utterance (a
window, plus some frames of right context), against the same samples of the one-shot render. The
signal-to-error ratio says how far the window's audio is from the one-shot audio (a sample-level
measure: it also counts a harmonic's phase moving, which the ear may not hear).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tts_server.model_files import PREDICTION_OUTPUTS, SAMPLES_PER_FRAME, file_digest
from voice_agent.bench.tts import summarize

WINDOW_FRAMES = 40
"""The first window: 40 frames, one second of audio."""
CONTEXTS = (0, 20, 40, 80)
"""Frames of right context the window is decoded with."""


class SplitModel:
    def __init__(self, engine: Any) -> None:
        import onnxruntime as ort

        from tts_server.engine import session_options
        from tts_server.model_files import model_path, split_at_decoder

        self.engine = engine
        self.paths = split_at_decoder(model_path())
        self.prediction, self.decoder = (ort.InferenceSession(str(path), session_options(2),
                                                              providers=["CPUExecutionProvider"])
                                         for path in self.paths)

    def digests(self) -> dict[str, str]:
        return {path.name: file_digest(path) for path in self.paths}

    def predict(self, text: str) -> tuple[dict[str, np.ndarray], float]:
        feeds = self.engine.feeds(self.engine.phonemize(text)[0].phonemes, self.engine.default_voice)
        started = time.perf_counter()
        outputs = self.prediction.run(list(PREDICTION_OUTPUTS), feeds)
        took = (time.perf_counter() - started) * 1000
        return {**dict(zip(PREDICTION_OUTPUTS, outputs, strict=True)), "style": feeds["style"]}, took

    def decode(self, inputs: dict[str, np.ndarray], frames: int | None = None) -> tuple[np.ndarray, float]:
        """The audio of the first ``frames`` frames (all when None), and the decoder's time."""
        if frames is not None:
            features, pitch, energy = PREDICTION_OUTPUTS
            inputs = {**inputs, features: np.ascontiguousarray(inputs[features][:, :, :frames]),
                      pitch: np.ascontiguousarray(inputs[pitch][:, :2 * frames]),
                      energy: np.ascontiguousarray(inputs[energy][:, :2 * frames])}
        started = time.perf_counter()
        audio = self.decoder.run(["audio"], inputs)[0].ravel()
        return audio, (time.perf_counter() - started) * 1000


def time_split(split: SplitModel, texts: dict[str, str], trials: int) -> dict[str, Any]:
    """Per text: prediction and decoder time, p50 of ``trials``."""
    results = {}
    for name, text in texts.items():
        prediction, decoder = [], []
        for _ in range(trials):
            inputs, predicted_ms = split.predict(text)
            _, decoded_ms = split.decode(inputs)
            prediction.append(predicted_ms)
            decoder.append(decoded_ms)
        p50 = summarize(prediction)["p50"], summarize(decoder)["p50"]
        results[name] = {"prediction_ms": p50[0], "decoder_ms": p50[1],
                         "decoder_share": round(p50[1] / (p50[0] + p50[1]), 3)}
    return results


def windows(split: SplitModel, text: str) -> dict[str, Any]:
    inputs, _ = split.predict(text)
    whole, whole_ms = split.decode(inputs)
    frames = inputs[PREDICTION_OUTPUTS[0]].shape[2]
    reference = whole[:WINDOW_FRAMES * SAMPLES_PER_FRAME]
    by_context = {}
    for context in CONTEXTS:
        audio, took = split.decode(inputs, min(frames, WINDOW_FRAMES + context))
        error = audio[:reference.size] - reference
        ratio = 10 * np.log10(float(np.sum(reference ** 2)) / max(float(np.sum(error ** 2)), 1e-12))
        by_context[str(context)] = {"decoder_ms": round(took, 1), "signal_to_error_db": round(ratio, 1)}
    return {"text": text, "frames": frames, "whole_decoder_ms": round(whole_ms, 1), "window_frames": WINDOW_FRAMES,
            "by_context": by_context}


def markdown(results: dict[str, Any]) -> str:
    split, window = results["split"], results["windows"]
    rows = ["| first chunk | prediction | decoder | decoder's share |", "|---|---|---|---|"]
    rows += [f"| {name} words | {f['prediction_ms']:,.0f} ms | {f['decoder_ms']:,.0f} ms | {f['decoder_share']:.1%} |"
             for name, f in split.items()]
    rows += ["", f"The decoder on the first {window['window_frames']} frames (1 s) of a {window['frames']}-frame "
                 f"utterance (whole: {window['whole_decoder_ms']:,.0f} ms):", "",
             "| right context | decoder time | signal to error vs the one-shot render |", "|---|---|---|"]
    rows += [f"| {context} frames | {f['decoder_ms']:,.0f} ms | {f['signal_to_error_db']} dB |"
             for context, f in window["by_context"].items()]
    return "\n".join(["Where the time goes (the model split at its decoder's inputs; digests: " +
                      ", ".join(f"`{name}` {digest[:12]}..." for name, digest in results["digests"].items()) + "):",
                      "", *rows])


def measure(engine: Any, texts: dict[str, str], trials: int) -> dict[str, Any]:
    split = SplitModel(engine)
    return {"digests": split.digests(), "split": time_split(split, texts, trials),
            "windows": windows(split, texts[max(texts, key=int)])}
