"""The pipeline's own overhead: how far time to first audio is from its physical limit.

For every incremental answer, the agent reports (in its ``end`` metrics) when the chunk whose audio
came first was ready as text, and the TTS server reports the pure model inference time for that
chunk, measured in-process around the ONNX Runtime call. What remains of the time to first audio
is the pipeline's own cost: speech text, the session, G2P, queueing, framing, encoding, relaying:

    overhead = time_to_first_audio - (first chunk ready + its inference)

all on the agent's clock from the request's arrival. Answers replay each packaged recording through
the real agent and TTS server.
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


async def measure(urls: dict[str, str], trials: int) -> dict[str, Any]:
    samples: list[dict[str, Any]] = []
    for _ in range(trials):
        for recording, url in urls.items():
            metrics = (await ask("Go.", Options(url=url))).server_metrics
            samples.append({"recording": recording, **{key: metrics[key] for key in (
                "time_to_first_audio_ms", "first_chunk_ready_ms", "first_chunk_inference_ms",
                "pipeline_overhead_ms")}})
    overhead = [sample["pipeline_overhead_ms"] for sample in samples]
    inference = [sample["first_chunk_inference_ms"] for sample in samples]
    return {"overhead_ms": {**summarize(overhead), "samples": overhead},
            "first_chunk_inference_ms": summarize(inference), "answers": samples,
            "machine": platform.platform()}


def markdown(results: dict[str, Any]) -> str:
    overhead, inference = results["overhead_ms"], results["first_chunk_inference_ms"]
    rows = ["| recording | first chunk ready | its inference | first audio | overhead |", "|---|---|---|---|---|"]
    for sample in results["answers"]:
        rows.append(f"| {sample['recording']} | {sample['first_chunk_ready_ms']} ms | "
                    f"{sample['first_chunk_inference_ms']} ms | {sample['time_to_first_audio_ms']} ms | "
                    f"{sample['pipeline_overhead_ms']} ms |")
    return "\n".join([
        f"{overhead['trials']} incremental answers (each packaged recording, replayed), agent-side clock.", "",
        f"Pipeline overhead on the way to first audio: **p50 {overhead['p50']} ms, p95 {overhead['p95']} ms** "
        f"(first-chunk inference itself: p50 {inference['p50']} ms).", "", *rows])


QUICK_RECORDINGS = ("short", "unfinished")
"""With ``quick``: the two shortest packaged answers."""


def main(out_dir: Path, trials: int = 3, quick: bool = False) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        tts = stack.enter_context(servers.running(servers.start_tts_server(progress=print)))
        urls = {name: stack.enter_context(servers.running(servers.start_agent_server(tts.ws_url, replay=name))).http_url
                for name in (QUICK_RECORDINGS if quick else RECORDINGS)}
        results = asyncio.run(measure(urls, 1 if quick else trials))
    write_results(out_dir, "overhead", results, markdown(results), plots.overhead)
    return results
