"""The pipeline's own overhead: how far time to first audio is from its physical limit.

For every incremental answer, the agent reports (in its ``end`` metrics) when the chunk whose audio
came first was ready as text, and the TTS server reports the pure model inference time for that
chunk, measured in-process around the ONNX Runtime call. What remains of the time to first audio
is the pipeline's own cost: speech text, the session, G2P, queueing, framing, encoding, relaying:

    overhead = time_to_first_audio - (first chunk ready + its inference)

all on the agent's clock from the request's arrival. Answers replay each packaged recording through
the real agent and TTS server. The same answers are also asked of a TTS server that renders every
request whole (``--windows 0``), alternating, so the time from "first chunk ready" to first audio is
compared in one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
from pathlib import Path
from typing import Any

from voice_agent.bench import plots, write_results
from voice_agent.bench.tts import summarize
from voice_agent.caller import Options, ask
from voice_agent.dev import servers

RECORDINGS = ("short", "long", "markdown", "unfinished", "clauses")


MODES = ("windows", "whole")
"""The agent's default (its first requests rendered in windows), then a TTS server that renders
every request whole."""


async def measure(urls: dict[str, dict[str, str]], trials: int) -> dict[str, Any]:
    """``urls``: per mode, per recording, an agent replaying it."""
    samples: dict[str, list[dict[str, Any]]] = {mode: [] for mode in urls}
    for _ in range(trials):
        for recording in urls[MODES[0]]:
            for mode, agents in urls.items():
                metrics = (await ask("Go.", Options(url=agents[recording]))).server_metrics
                samples[mode].append({"recording": recording, **{key: metrics[key] for key in (
                    "time_to_first_audio_ms", "first_chunk_ready_ms", "first_chunk_inference_ms",
                    "pipeline_overhead_ms")}})
    figures = {mode: _figures(answers) for mode, answers in samples.items()}
    ready_to_audio = {mode: figures[mode]["ready_to_first_audio_ms"]["p50"] for mode in figures}
    return {**figures[MODES[0]], "whole": figures[MODES[1]],
            "ready_to_first_audio_ratio": round(ready_to_audio[MODES[0]] / ready_to_audio[MODES[1]], 2),
            "machine": platform.platform()}


def _figures(answers: list[dict[str, Any]]) -> dict[str, Any]:
    overhead = [answer["pipeline_overhead_ms"] for answer in answers]
    return {"overhead_ms": {**summarize(overhead), "samples": overhead},
            "first_chunk_inference_ms": summarize([answer["first_chunk_inference_ms"] for answer in answers]),
            "ready_to_first_audio_ms": summarize([answer["time_to_first_audio_ms"] - answer["first_chunk_ready_ms"]
                                                  for answer in answers]),
            "first_audio_ms": {recording: summarize([answer["time_to_first_audio_ms"] for answer in answers
                                                     if answer["recording"] == recording])
                               for recording in dict.fromkeys(answer["recording"] for answer in answers)},
            "answers": answers}


def markdown(results: dict[str, Any]) -> str:
    overhead, inference = results["overhead_ms"], results["first_chunk_inference_ms"]
    whole = results["whole"]
    rows = ["| recording | first chunk ready | its inference | first audio | overhead |", "|---|---|---|---|---|"]
    for sample in results["answers"]:
        rows.append(f"| {sample['recording']} | {sample['first_chunk_ready_ms']} ms | "
                    f"{sample['first_chunk_inference_ms']} ms | {sample['time_to_first_audio_ms']} ms | "
                    f"{sample['pipeline_overhead_ms']} ms |")
    side = ["| recording | first audio p50, windows | rendered whole |", "|---|---|---|"]
    side += [f"| {recording} | {first['p50']:,.1f} ms | {whole['first_audio_ms'][recording]['p50']:,.1f} ms |"
             for recording, first in results["first_audio_ms"].items()]
    return "\n".join([
        f"{overhead['trials']} incremental answers (each packaged recording, replayed), agent-side clock.", "",
        f"Pipeline overhead on the way to first audio: **p50 {overhead['p50']} ms, p95 {overhead['p95']} ms** "
        f"(first-chunk inference itself: p50 {inference['p50']} ms).", "", *rows, "",
        f"The same answers from a TTS server rendering every request whole (`--windows 0`), alternating: "
        f"first chunk ready to first audio p50 **{results['ready_to_first_audio_ms']['p50']:,.1f} ms** in windows, "
        f"{whole['ready_to_first_audio_ms']['p50']:,.1f} ms whole "
        f"(**{results['ready_to_first_audio_ratio']}x**); first-chunk inference p50 "
        f"{whole['first_chunk_inference_ms']['p50']} ms whole; pipeline overhead p50 {whole['overhead_ms']['p50']} ms.",
        "", *side])


QUICK_RECORDINGS = ("short", "unfinished")
"""With ``quick``: the two shortest packaged answers."""


def main(out_dir: Path, trials: int = 3, quick: bool = False) -> dict[str, Any]:
    recordings = QUICK_RECORDINGS if quick else RECORDINGS
    with contextlib.ExitStack() as stack:
        urls: dict[str, dict[str, str]] = {}
        for mode, extra_args in zip(MODES, ([], ["--windows", "0"]), strict=True):
            tts = stack.enter_context(servers.running(servers.start_tts_server(progress=print, extra_args=extra_args)))
            urls[mode] = {name: stack.enter_context(servers.running(
                servers.start_agent_server(tts.ws_url, replay=name))).http_url for name in recordings}
        results = asyncio.run(measure(urls, 1 if quick else trials))
    write_results(out_dir, "overhead", results, markdown(results), plots.overhead)
    return results
