"""The isolated TTS test of the AWS guide, reproduced: a 267-character, four-sentence passage sent
whole versus only its first sentence, time to first audio byte, modes alternating per trial.

Each trial opens a session on the real TTS server (started here unless a URL is given), sends one
request and measures from sending it to the first audio frame. Reference, on an ml.g5.xlarge GPU:
329.3 ms whole, 156.7 ms first sentence, -52.4%.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from agent.tts_client import TTSSession
from voice_agent.bench import plots, write_results
from voice_agent.dev import servers

PASSAGE = (
    "Streaming speech lets a voice agent start talking before it has finished thinking. "
    "Each sentence is synthesized as soon as the model completes it. "
    "Listeners hear the first words while the rest is being written. "
    "The wait before the first sound shrinks to one sentence."
)
FIRST_SENTENCE = PASSAGE.split(". ")[0] + "."
REFERENCE = {"whole_ms": 329.3, "first_sentence_ms": 156.7, "reduction": -0.524,
             "machine": "ml.g5.xlarge GPU"}


async def time_to_first_audio(url: str, text: str) -> float:
    async with TTSSession(url) as tts:
        started = time.perf_counter()
        stream = await tts.synthesize(text)
        first = None
        async for _ in stream:
            if first is None:
                first = (time.perf_counter() - started) * 1000
        assert first is not None, "no audio"
        return first


def summarize(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"mean": round(statistics.fmean(values), 1), "p50": round(statistics.median(values), 1),
            "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1),
            "max": round(ordered[-1], 1), "trials": len(values)}


async def measure(url: str, trials: int) -> dict[str, Any]:
    await time_to_first_audio(url, "Warm up.")
    samples: dict[str, list[float]] = {"whole": [], "first_sentence": []}
    for _ in range(trials):
        samples["whole"].append(await time_to_first_audio(url, PASSAGE))
        samples["first_sentence"].append(await time_to_first_audio(url, FIRST_SENTENCE))
    whole, first = summarize(samples["whole"]), summarize(samples["first_sentence"])
    return {"passage_chars": len(PASSAGE), "first_sentence_chars": len(FIRST_SENTENCE), "whole": whole,
            "first_sentence": first, "reduction": round(first["mean"] / whole["mean"] - 1, 3),
            "samples_ms": samples, "reference": REFERENCE, "machine": platform.platform()}


def markdown(results: dict[str, Any]) -> str:
    reference = results["reference"]
    whole, first = results["whole"], results["first_sentence"]
    return "\n".join([
        f"Passage {results['passage_chars']} characters, four sentences; first sentence "
        f"{results['first_sentence_chars']} characters; {whole['trials']} trials per mode, alternating.", "",
        "| time to first audio byte | whole passage | first sentence only | change |", "|---|---|---|---|",
        f"| this machine (CPU), mean | {whole['mean']} ms | {first['mean']} ms | {results['reduction']:+.1%} |",
        f"| this machine (CPU), p50 / p95 | {whole['p50']} / {whole['p95']} ms "
        f"| {first['p50']} / {first['p95']} ms | |",
        f"| AWS guide, {reference['machine']}, mean | {reference['whole_ms']} ms | {reference['first_sentence_ms']} ms "
        f"| {reference['reduction']:+.1%} |",
    ])


def main(out_dir: Path, trials: int = 5, tts_url: str | None = None, quick: bool = False) -> dict[str, Any]:
    """``quick``: one trial per mode."""
    trials = 1 if quick else trials
    with contextlib.ExitStack() as stack:
        if tts_url is None:
            server = stack.enter_context(servers.running(servers.start_tts_server(progress=print)))
            tts_url = server.ws_url
        results = asyncio.run(measure(tts_url, trials))
    write_results(out_dir, "tts", results, markdown(results), plots.tts)
    return results
