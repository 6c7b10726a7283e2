"""The agent comparison of the AWS guide, reproduced: the same prompt and the same replayed model
stream, batch versus incremental, through the real agent and the real TTS server, configurations
alternating; plus the incremental path with each latency feature switched off.

Times are the caller's, from sending the request: first text, first audio, total. Reference: first
audio 2.4x sooner incremental with a local agent container, 3.5x with deployed AgentCore.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
from pathlib import Path
from typing import Any

from agent.llm.replay import load_recording
from agent.recordings import packaged_recordings
from voice_agent.bench import plots, stalls, write_results
from voice_agent.bench.tts import summarize
from voice_agent.caller import Options, ask
from voice_agent.dev import servers

REFERENCE = {"ratio_local": 2.4, "ratio_deployed": 3.5, "machine": "AWS guide, ml.g5.xlarge TTS endpoint"}
METRICS = ("time_to_first_text_ms", "time_to_first_audio_ms", "time_to_first_speech_ms", "total_ms")
TARGETS = {"clauses": 1_000.0, "long": 700.0}
"""First audio p50 (ms) each replayed answer should reach on two CPU cores, incremental."""


CONFIGURATIONS = {
    "incremental": ("incremental", {}),
    "incremental, no quick first chunk": ("incremental", {"VOICE_AGENT_QUICK_FIRST_CHUNK": "0"}),
    "incremental, no pipelining": ("incremental", {"VOICE_AGENT_PIPELINING": "0"}),
    "batch": ("batch", {}),
}
"""What each latency feature contributes: the incremental path with it switched off, one at a time."""


async def measure(urls: dict[str, str], recording: str, trials: int,
                  targets: dict[str, str] | None = None) -> dict[str, Any]:
    """``urls``: per configuration, an agent replaying ``recording``; ``targets``: per other
    recording in :data:`TARGETS`, an incremental agent replaying it, asked in turn with them."""
    prompt, targets = load_recording(recording).meta.get("prompt", "Go."), targets or {}
    samples: dict[str, dict[str, list[float]]] = {name: {metric: [] for metric in METRICS}
                                                  for name in [*urls, *targets]}
    for _ in range(trials):
        for name, url in [*urls.items(), *targets.items()]:
            answer = await ask(prompt if name in urls else "Go.",
                               Options(url=url, mode=CONFIGURATIONS[name][0] if name in urls else "incremental"))
            for metric in METRICS:
                samples[name][metric].append(getattr(answer, metric))
    summary = {name: {metric: summarize(values) for metric, values in by_metric.items()}
               for name, by_metric in samples.items()}
    first_audio = {name: summary[name]["time_to_first_audio_ms"]["mean"] for name in summary}
    ratio = first_audio["batch"] / first_audio["incremental"]
    reached = {recording: summary["incremental"]} if recording in TARGETS else {}
    reached.update((name, summary[name]) for name in targets)
    return {"summary": {name: summary[name] for name in urls}, "first_audio_ratio": round(ratio, 2),
            "targets": {name: {"target_ms": TARGETS[name], "first_audio_ms": figures["time_to_first_audio_ms"],
                               "first_speech_ms": figures["time_to_first_speech_ms"],
                               "met": figures["time_to_first_audio_ms"]["p50"] <= TARGETS[name]}
                        for name, figures in reached.items()},
            "samples_ms": samples, "reference": REFERENCE,
            "barge_in": await barge_in(urls["incremental"], prompt, trials), "machine": platform.platform()}


async def barge_in(url: str, prompt: str, trials: int) -> dict[str, Any]:
    """Cancel each answer on the /ws leg as its first audio arrives: the agent's own stop time
    (model stream and TTS session stopped) and the caller's, from sending ``cancel`` to the ``end``."""
    agent_ms, caller_ms = [], []
    for _ in range(max(trials, 3)):
        answer = await ask(prompt, Options(url=url, ws=True),
                           cancel_after=lambda a: a.time_to_first_audio_ms is not None)
        if not answer.server_metrics.get("cancelled"):
            raise RuntimeError("the answer ended before the cancel reached the agent")
        agent_ms.append(answer.server_metrics["stop_ms"])
        caller_ms.append(round(answer.total_ms - answer.cancel_sent_ms, 1))
    return {"agent_stop_ms": summarize(agent_ms), "caller_cancel_to_end_ms": summarize(caller_ms)}


def markdown(results: dict[str, Any], recording: str) -> str:
    rows = ["| configuration | first text p50 | first audio mean | first audio p50 / p95 | first speech p50 | "
            "total p50 |", "|---|---|---|---|---|---|"]
    for name, metrics in results["summary"].items():
        text, first, speech, total = (metrics[m] for m in METRICS)
        rows.append(f"| {name} | {text['p50']} ms | {first['mean']} ms | {first['p50']} / {first['p95']} ms | "
                    f"{speech['p50']} ms | {total['p50']} ms |")
    reference = results["reference"]
    trials = results["summary"]["batch"]["total_ms"]["trials"]
    targets = ["| replayed answer | first audio p50 | target | first speech p50 |", "|---|---|---|---|"]
    targets += [f"| `{name}` | {target['first_audio_ms']['p50']:,.1f} ms | {target['target_ms']:,.0f} ms "
                f"({'met' if target['met'] else 'not met'}) | {target['first_speech_ms']['p50']:,.1f} ms |"
                for name, target in results["targets"].items()]
    return "\n".join([
        f"Replayed recording `{recording}`, {trials} trials per configuration, alternating. First speech: when a "
        "listener playing from the first audio hears the first speech in it (`tts_protocol.speech_onset`).", "",
        *rows, "",
        f"First audio **{results['first_audio_ratio']}x** sooner with incremental speech than batch "
        f"(reference: {reference['ratio_local']}x local, {reference['ratio_deployed']}x deployed; "
        f"{reference['machine']}).", "",
        *(["Targets (incremental, asked in turn with the configurations above):", "", *targets, ""]
          if results["targets"] else []),
        f"Barge-in ({results['barge_in']['agent_stop_ms']['trials']} answers cancelled on /ws at their first "
        f"audio): model stream and TTS session stopped in {results['barge_in']['agent_stop_ms']['p50']} ms p50, "
        f"{results['barge_in']['agent_stop_ms']['max']} ms max (agent side); cancel sent to `end` received "
        f"{results['barge_in']['caller_cancel_to_end_ms']['p50']} ms p50, "
        f"{results['barge_in']['caller_cancel_to_end_ms']['max']} ms max (caller side; target 100 ms)."])


QUICK_RECORDING = "short"
"""With ``quick``: the shortest packaged answer instead of ``clauses``."""
QUICK_CONFIGURATIONS = ("incremental", "batch")
"""With ``quick``: the two configurations the ratio needs."""


QUICK_STALL_LEVELS = (1, 2)
"""With ``quick``: the playback simulation's levels, on the quick recording only."""


def main(out_dir: Path, trials: int = 3, recording: str = "clauses", quick: bool = False) -> dict[str, Any]:
    if quick:
        trials, recording = 1, QUICK_RECORDING
    with contextlib.ExitStack() as stack:
        tts = stack.enter_context(servers.running(servers.start_tts_server(progress=print)))

        def agent(replay: str, env: dict[str, str]) -> str:
            return stack.enter_context(servers.running(servers.start_agent_server(tts.ws_url, replay=replay,
                                                                                  env=env))).http_url

        urls = {name: agent(recording, env) for name, (_, env) in CONFIGURATIONS.items()
                if not quick or name in QUICK_CONFIGURATIONS}
        targets = {name: agent(name, {}) for name in TARGETS if name != recording}
        results = asyncio.run(measure(urls, recording, trials, targets))
        replays = (QUICK_RECORDING,) if quick else packaged_recordings()
        stall_urls = {name: urls["incremental"] if name == recording else agent(name, {}) for name in replays}
        results["stalls"] = asyncio.run(stalls.measure(stall_urls, QUICK_STALL_LEVELS if quick else stalls.LEVELS))
    write_results(out_dir, "agent", results, markdown(results, recording) + "\n\n" + stalls.markdown(results["stalls"]),
                  plots.agent)
    return results
