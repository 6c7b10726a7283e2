"""The engine alone, today's against each candidate, side by side in one run: for first chunks of 3
to 16 words, the time from the text to the first audio byte (G2P, then the model), the total
inference time and the real-time factor; per candidate, its start-up time (model load and warm-up)
and peak memory. Then where the engine spends the time, prediction or decoder, and what rendering in
windows costs (``rendering``), the shorter-first-chunk lever and its cost (``phrasing``), and the
model's own decoder against its statically quantized form, speed and word error rate (``decoders``).

Each candidate runs in its own process, one after another, so its start-up and peak resident memory
are its own and no two compete for the cores; a full run makes two rounds, the candidates forward
then backward, so none always runs first (on a machine whose speed drifts, order alone ranked
them). The candidates: rendering the chunk in windows or whole, with the static decoder or the
model's own, and ONNX Runtime session options
(threads, whether worker threads spin between operators, the graph optimisation level). The text
is the Harvard sentences' opening words (``harvard.SENTENCES``), cut to each length.
"""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tts_protocol import pcm16_seconds
from voice_agent.bench import harvard, write_results
from voice_agent.bench.tts import summarize

WORD_COUNTS = (3, 4, 6, 8, 12, 16)
QUICK_WORD_COUNTS = (3, 8)
SERVED = {"threads": 2, "spinning": True, "graph": "all", "static_decoder": True}
CANDIDATES: dict[str, dict[str, Any]] = {
    "in windows (2 threads, spinning, all graph optimisations, static decoder)": {**SERVED, "windowed": True},
    "in windows, the model's own decoder": {**SERVED, "static_decoder": False, "windowed": True},
    "whole (the same options)": {**SERVED, "windowed": False},
    "whole, the model's own decoder": {**SERVED, "static_decoder": False, "windowed": False},
    "whole, 1 thread": {**SERVED, "threads": 1, "windowed": False},
    "whole, no spinning": {**SERVED, "spinning": False, "windowed": False},
    "whole, extended graph optimisations": {**SERVED, "graph": "extended", "windowed": False},
    "whole, basic graph optimisations": {**SERVED, "graph": "basic", "windowed": False},
}
"""The first is what the server does with a request its listener waits for; the second runs the
model's own (dynamically quantized) decoder instead of its static form (``tts_server.static_decoder``);
the third and fourth render whole, as the server does every other request; each other changes one
session option from the third."""
QUICK_CANDIDATES = 3
ROUNDS = 2
"""Passes over the candidates (alternating their order) in a full run."""
WORKER_TIMEOUT = 900.0
"""Seconds one candidate's process may take (a full run takes about a minute)."""


def first_words(count: int) -> str:
    words = " ".join(harvard.SENTENCES).split()[:count]
    return " ".join(words).rstrip(".,;:!?") + "."


def run_candidate(options: dict[str, Any], word_counts: tuple[int, ...], trials: int) -> dict[str, Any]:
    """In the candidate's own process: load, warm up, then time each length ``trials`` times (raw
    samples: the parent combines rounds)."""
    from tts_server.engine import KokoroEngine, session_options

    started = time.perf_counter()
    engine = KokoroEngine.load(options=session_options(options["threads"], spinning=options["spinning"],
                                                       graph=options["graph"]),
                               static_decoder=options["static_decoder"])
    engine.warm_up()
    startup_ms = (time.perf_counter() - started) * 1000
    lengths = {}
    for count in word_counts:
        text = first_words(count)
        first, total, audio, parts = [], [], b"", 0
        for _ in range(trials):
            begun, audio, parts = time.perf_counter(), b"", 0
            for pcm in engine.synthesize(text, windowed=options["windowed"]):
                if not audio:
                    first.append((time.perf_counter() - begun) * 1000)
                audio, parts = audio + pcm, parts + 1
            total.append((time.perf_counter() - begun) * 1000)
        lengths[str(count)] = {"text": text, "first": first, "total": total, "audio_s": pcm16_seconds(len(audio)),
                               "parts": parts}
    applied = engine.options
    return {"options": options, "applied": {
        "threads": applied.intra_op_num_threads, "graph": applied.graph_optimization_level.name,
        "spinning": applied.get_session_config_entry("session.intra_op.allow_spinning"),
        "decoder": engine.decoder_path.name if engine.decoder_path else None},
        "startup_ms": startup_ms, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "lengths": lengths}


def _run_process(name: str, options: dict[str, Any], word_counts: tuple[int, ...], trials: int) -> dict[str, Any]:
    from agent.processes import Tie

    request = json.dumps({"options": options, "word_counts": word_counts, "trials": trials})
    with Tie() as tie:
        completed = subprocess.run([sys.executable, "-m", "voice_agent.bench.engine", request], env=tie.env,
                                   pass_fds=tie.pass_fds, capture_output=True, text=True,
                                   timeout=WORKER_TIMEOUT, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"candidate {name!r} failed: {completed.stderr.strip()[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One candidate's rounds as one result: every trial's sample summarised together."""
    lengths = {}
    for count, length in runs[0]["lengths"].items():
        total = summarize([ms for run in runs for ms in run["lengths"][count]["total"]])
        lengths[count] = {"text": length["text"], "audio_s": round(length["audio_s"], 3), "total_ms": total,
                          "parts": max(run["lengths"][count]["parts"] for run in runs),
                          "first_audio_ms": summarize([ms for run in runs for ms in run["lengths"][count]["first"]]),
                          "rtf": round(total["p50"] / 1000 / length["audio_s"], 3)}
    return {"options": runs[0]["options"], "applied": runs[0]["applied"], "rounds": len(runs),
            "startup_ms": summarize([run["startup_ms"] for run in runs])["p50"],
            "peak_rss_mb": round(max(run["peak_rss_mb"] for run in runs), 1), "lengths": lengths}


def measure(candidates: dict[str, dict[str, Any]], word_counts: tuple[int, ...], trials: int,
            rounds: int = ROUNDS) -> dict[str, Any]:
    """``rounds`` passes over the candidates, each in its own process per round, in turn forward and
    backward (so no candidate always runs first or last), ``trials`` per length per round."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in candidates}
    for number in range(rounds):
        for name in list(candidates) if number % 2 == 0 else list(reversed(candidates)):
            runs[name].append(_run_process(name, candidates[name], word_counts, trials))
    return {"candidates": {name: _combine(runs[name]) for name in candidates}, "word_counts": list(word_counts),
            "trials": trials * rounds, "rounds": rounds, "machine": platform.platform()}


def markdown(results: dict[str, Any]) -> str:
    counts = [str(count) for count in results["word_counts"]]
    rows = ["| candidate | " + " | ".join(f"{count} words" for count in counts) + " | RTF (longest) | start-up | "
            "peak memory |", "|---|" + "---|" * (len(counts) + 3)]
    for name, figures in results["candidates"].items():
        cells = [f"{figures['lengths'][count]['first_audio_ms']['p50']:,.0f} ms" for count in counts]
        longest = figures["lengths"][counts[-1]]
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {longest['rtf']} | {figures['startup_ms']:,.0f} ms | "
                    f"{figures['peak_rss_mb']:,.0f} MB |")
    return "\n".join([f"Time from the text to the first audio byte, p50 of {results['trials']} trials per length "
                      f"over {results['rounds']} rounds, the candidates in turn forward and backward, each in its own "
                      f"process per round; {results['machine']}.", "", *rows])


QUICK_PHRASING_SENTENCES = 6
"""With ``quick``: the Harvard sentences the shorter-first-chunk lever is tried on (the first ones)."""
QUICK_HELD_OUT = 3
"""With ``quick``: the held-out Harvard sentences the leading silence's renderings are compared on."""


def main(out_dir: Path, trials: int = 3, quick: bool = False) -> dict[str, Any]:
    from tts_server.engine import KokoroEngine
    from voice_agent.bench import decoders, phrasing, rendering
    from voice_agent.bench.hearing import recogniser

    candidates = dict(list(CANDIDATES.items())[:QUICK_CANDIDATES]) if quick else CANDIDATES
    results = measure(candidates, QUICK_WORD_COUNTS if quick else WORD_COUNTS, 1 if quick else trials,
                      1 if quick else ROUNDS)
    today = KokoroEngine.load(threads=2)
    counts = QUICK_WORD_COUNTS if quick else WORD_COUNTS
    sentences = harvard.SENTENCES[:QUICK_PHRASING_SENTENCES] if quick else harvard.SENTENCES
    model = recogniser()
    results["rendering"] = rendering.measure(today, model, {str(count): first_words(count) for count in counts},
                                             sentences, 1 if quick else trials,
                                             rendering.SHAPES[:1] if quick else rendering.SHAPES,
                                             harvard.HELD_OUT[:QUICK_HELD_OUT] if quick else harvard.HELD_OUT)
    results["shorter_first_chunk"] = phrasing.measure(today, model, sentences)
    results["decoders"] = decoders.measure(model, harvard.SENTENCES[:QUICK_HELD_OUT] if quick
                                           else harvard.SENTENCES + harvard.HELD_OUT)
    reports = [markdown(results), rendering.markdown(results["rendering"]),
               phrasing.markdown(results["shorter_first_chunk"]), decoders.markdown(results["decoders"])]
    write_results(out_dir, "engine", results, "\n\n".join(reports))
    return results


if __name__ == "__main__":
    from agent.processes import exit_with_parent

    exit_with_parent()
    request = json.loads(sys.argv[1])
    print(json.dumps(run_candidate(request["options"], tuple(request["word_counts"]), request["trials"])))
