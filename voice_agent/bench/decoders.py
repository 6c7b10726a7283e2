"""The decoder as the packaged model quantizes it (dynamically) against its statically quantized
form (``tts_server.static_decoder``), in one process on the same sentences, each sentence rendered by
both in turn: the time to the first part in windows (as the server renders a request a listener
waits for) and whole, and what the recogniser hears of each (word error rate), whole and in windows.
A rendering change may cost at most 0.01 of word error rate against the render it replaces."""

from __future__ import annotations

from typing import Any

from voice_agent.bench.tts import summarize

DECODERS = {"dynamic int8 (the model's own)": False, "static int8 (30 generator convolutions)": True}
"""The decoders compared, by the engine's ``static_decoder`` switch."""


def measure(model: Any, sentences: list[str], threads: int = 2) -> dict[str, Any]:
    from tts_server.engine import KokoroEngine
    from voice_agent.bench.hearing import words
    from voice_agent.bench.rendering import render_timed, wer_heard

    engines = {name: KokoroEngine.load(threads=threads, static_decoder=static) for name, static in DECODERS.items()}
    references = [words(sentence) for sentence in sentences]
    wer = wer_heard(model, references)
    renders: dict[str, dict[str, list[Any]]] = {name: {"whole": [], "windows": []} for name in engines}
    for sentence in sentences:
        for name, engine in engines.items():
            feeds = engine.feeds(engine.phonemize(sentence)[0].phonemes, engine.default_voice)
            renders[name]["whole"].append(render_timed(engine.renderer, feeds, context=False, windowed=False))
            renders[name]["windows"].append(render_timed(engine.renderer, feeds))
    results = {}
    for name, rendered in renders.items():
        results[name] = {"decoder": engines[name].decoder_path.name,  # type: ignore[union-attr]
                         "first_part_ms": summarize([first for _, _, first in rendered["windows"]]),
                         "whole_ms": summarize([first for _, _, first in rendered["whole"]]),
                         "wer": {kind: wer([audio for audio, _, _ in rendered[kind]]) for kind in ("whole", "windows")}}
    return {"sentences": len(sentences), "reference_words": sum(map(len, references)), "decoders": results}


def markdown(results: dict[str, Any]) -> str:
    rows = [f"The decoders side by side ({results['sentences']} Harvard sentences, {results['reference_words']} words, "
            "each rendered by both in turn; times from the phonemes):", "",
            "| decoder | first audio in windows, p50 / p95 | whole, p50 | word error rate whole | in windows |",
            "|---|---|---|---|---|"]
    for name, figures in results["decoders"].items():
        first, whole = figures["first_part_ms"], figures["whole_ms"]
        rows.append(f"| {name} | {first['p50']:,.0f} / {first['p95']:,.0f} ms | {whole['p50']:,.0f} ms "
                    f"| {figures['wer']['whole']:.3f} | {figures['wer']['windows']:.3f} |")
    return "\n".join(rows)
