"""Capacity: 1..N concurrent sessions against one TTS server, each pipelining a three-sentence answer.

Per concurrency level: time to first audio (p50, p95 over all sessions and trials), the real-time
factor a session experiences (its wall time over the audio it received), and the server's aggregate
throughput in seconds of audio per second. The server runs one inference at a time, so throughput
levels off once the cores are busy and time to first audio grows with the queue; the level where
throughput stops growing is where this machine saturates.

Each answer asks for its first request in windows, as the agent does (``tts_server.rendering``);
when the benchmark starts its own servers it also measures, side by side, one that renders every
request whole (``--windows 0``) and one that runs the model's own decoder instead of its statically
quantized form (``--static-decoder 0``, ``tts_server.static_decoder``).
"""

from __future__ import annotations

import asyncio
import platform
import time
from pathlib import Path
from typing import Any

import tts_protocol
from agent.tts_client import TTSSession
from voice_agent.bench import plots, write_results
from voice_agent.bench.tts import summarize
from voice_agent.dev import servers

ANSWER = ["The first sentence starts the answer.", "A second one adds a little detail to it.",
          "The third sentence closes it."]
LEVELS = (1, 2, 4)


async def one_session(url: str) -> tuple[float, float, float]:
    """(time to first audio ms, wall seconds, audio seconds) for one pipelined answer."""
    async with TTSSession(url) as tts:
        started = time.perf_counter()
        streams = [await tts.synthesize(text, windows=index == 0) for index, text in enumerate(ANSWER)]
        first, audio = None, 0
        for stream in streams:
            async for chunk in stream:
                first = first if first is not None else (time.perf_counter() - started) * 1000
                audio += len(chunk)
        return first or 0.0, time.perf_counter() - started, tts_protocol.pcm16_seconds(audio)


async def measure(url: str, trials: int, levels: tuple[int, ...] = LEVELS) -> dict[str, Any]:
    await one_session(url)  # warm up
    results: dict[str, Any] = {}
    for level in levels:
        first_audio, factors, throughput = [], [], []
        for _ in range(trials):
            started = time.perf_counter()
            sessions = await asyncio.gather(*(one_session(url) for _ in range(level)))
            wall = time.perf_counter() - started
            first_audio += [first for first, _, _ in sessions]
            factors += [elapsed / audio for _, elapsed, audio in sessions]
            throughput.append(sum(audio for _, _, audio in sessions) / wall)
        results[str(level)] = {"time_to_first_audio_ms": summarize(first_audio),
                               "session_rtf": summarize(factors),
                               "audio_seconds_per_second": round(sum(throughput) / len(throughput), 2)}
    best = max(results.values(), key=lambda level: level["audio_seconds_per_second"])["audio_seconds_per_second"]
    saturated = next(level for level, figures in results.items()
                     if figures["audio_seconds_per_second"] >= 0.9 * best)
    return {"levels": results, "saturates_at": int(saturated), "machine": platform.platform(), "trials": trials}


VARIANTS = {"whole": (["--windows", "0"], "The same server rendering every request whole (`--windows 0`)"),
            "model_decoder": (["--static-decoder", "0"], "The server running the model's own decoder, dynamically "
                                                         "quantized (`--static-decoder 0`)")}
"""The other servers a run that starts its own measures: options, and how the report names them."""


def _table(results: dict[str, Any]) -> list[str]:
    rows = ["| sessions | first audio p50 / p95 | session RTF p50 / p95 | audio s per s (server) |",
            "|---|---|---|---|"]
    for level, figures in results["levels"].items():
        first, rtf = figures["time_to_first_audio_ms"], figures["session_rtf"]
        rows.append(f"| {level} | {first['p50']} / {first['p95']} ms | {rtf['p50']} / {rtf['p95']} | "
                    f"{figures['audio_seconds_per_second']} |")
    return [*rows, "", f"Throughput reaches 90% of its best at {results['saturates_at']} concurrent session(s)."]


def markdown(results: dict[str, Any]) -> str:
    lines = [f"{results['trials']} trial(s) per level; {results['machine']}.", "",
             "Each answer's first request rendered in windows (the server's default):", "",
             *_table(results)]
    for variant, (_, title) in VARIANTS.items():
        if variant in results:
            lines += ["", f"{title}:", "", *_table(results[variant])]
    return "\n".join(lines)


QUICK_LEVELS = (1, 2)
"""With ``quick``: the concurrency levels measured."""


def main(out_dir: Path, trials: int = 2, tts_url: str | None = None, quick: bool = False) -> dict[str, Any]:
    trials, levels = (1, QUICK_LEVELS) if quick else (trials, LEVELS)
    if tts_url is not None:
        results = asyncio.run(measure(tts_url, trials, levels))
    else:
        with servers.running(servers.start_tts_server(progress=print)) as server:
            results = asyncio.run(measure(server.ws_url, trials, levels))
        for variant, (options, _) in VARIANTS.items():
            with servers.running(servers.start_tts_server(progress=print, extra_args=options)) as server:
                other = asyncio.run(measure(server.ws_url, trials, levels))
            results[variant] = {"levels": other["levels"], "saturates_at": other["saturates_at"]}
    write_results(out_dir, "capacity", results, markdown(results), plots.capacity)
    return results
