"""The offline language model's speed, as the agent runs it: SmolLM2-135M through llama.cpp in its
worker process, the same prompt and seed each trial.

Reports the CPU features the installed llama.cpp was built with, the time to the first token, and
generation speed in tokens per second (tokens after the first, over the time from the first to the
last). To measure another build of llama-cpp-python, put its site-packages first on PYTHONPATH: the
worker imports ``llama_cpp`` from there.
"""

from __future__ import annotations

import asyncio
import platform
import time
from pathlib import Path
from typing import Any

from agent.config import DEFAULT_SYSTEM_PROMPT
from agent.llm.local import LocalModel, build_features
from voice_agent.bench import write_results
from voice_agent.bench.tts import summarize

PROMPT = "Why is the sky blue? Explain it in a few sentences."
MAX_TOKENS = 128


async def one_answer(model: LocalModel) -> dict[str, float]:
    messages: Any = [{"role": "user", "content": [{"text": PROMPT}]}]
    started = time.perf_counter()
    arrivals = []
    async for event in model.stream(messages, system_prompt=DEFAULT_SYSTEM_PROMPT):
        if "contentBlockDelta" in event:
            arrivals.append(time.perf_counter() - started)
    generation = arrivals[-1] - arrivals[0]
    return {"first_token_ms": arrivals[0] * 1000, "tokens": len(arrivals),
            "tokens_per_second": (len(arrivals) - 1) / generation if generation > 0 else 0.0}


async def measure(trials: int) -> dict[str, Any]:
    model = LocalModel(max_tokens=MAX_TOKENS, seed=7)
    started = time.perf_counter()
    model.warm_up()
    start_ms = (time.perf_counter() - started) * 1000
    await one_answer(model)  # the first answer also fills llama.cpp's caches
    samples = [await one_answer(model) for _ in range(trials)]
    return {"features": build_features(), "worker_start_ms": round(start_ms, 1),
            "first_token_ms": summarize([sample["first_token_ms"] for sample in samples]),
            "tokens_per_second": summarize([sample["tokens_per_second"] for sample in samples]),
            "tokens": [sample["tokens"] for sample in samples], "machine": platform.platform(),
            "cpu": _cpu_name()}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def markdown(results: dict[str, Any]) -> str:
    speed, first = results["tokens_per_second"], results["first_token_ms"]
    return "\n".join([
        f"SmolLM2-135M (Q4_1) through llama.cpp's worker process, {speed['trials']} answers of up to {MAX_TOKENS} "
        f"tokens on {results['cpu']}.", "",
        f"Build: `{results['features']}`", "",
        "| worker start | first token p50 | tokens per second mean / p50 |", "|---|---|---|",
        f"| {results['worker_start_ms']} ms | {first['p50']} ms | {speed['mean']} / {speed['p50']} |"])


def main(out_dir: Path, trials: int = 3, quick: bool = False) -> dict[str, Any]:
    results = asyncio.run(measure(1 if quick else trials))
    write_results(out_dir, "local_model", results, markdown(results))
    return results
