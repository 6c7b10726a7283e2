"""The fault campaign: answers through the real agent and TTS server, each with one fault injected
at a random moment, each compared with an undisturbed reference answer.

The agent reaches its own TTS server through ``voice_agent.dev.fault_proxy``, which resets the
connection, cuts an audio frame in half, stalls past the agent's TTS timeout, or answers a request
with an error; or the TTS server is killed and restarted on its port. A connection reset, a cut
frame and a restarted server must be recovered from: every sentence exactly once, in order, its
audio byte-identical to the reference. A stall past the timeout and an error reply cannot be, by
design: the answer must end with an ``error`` event naming the cause, nothing after it, and the
sentences delivered before it must be the reference's."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from voice_agent.bench.tts import summarize
from voice_agent.caller import CallerError, Options, StreamBroken, ask
from voice_agent.dev import servers
from voice_agent.dev.fault_proxy import FaultProxy

KINDS = ("reset", "kill", "mid_frame", "stall", "error_reply")
RECOVERABLE = ("reset", "kill", "mid_frame")
RECORDING = "unfinished"
"""Four chunks, the last an unpunctuated tail flushed at the end: about 5 s of synthesis here."""
TTS_TIMEOUT = 15.0
"""The agent's TTS timeout in the campaign (60 s by default): longer than a TTS server takes to
restart here, so a restart is ridden out; a stall lasts longer than it."""
STALL_SECONDS = 20.0
RECONNECTS = 7
"""Enough reconnection attempts (0.2 s, doubling) to ride out a TTS server restart (about 5 s)."""
ANSWER_TIMEOUT = 120.0
REFERENCE_ANSWERS = 3
MAX_TRIES = 3
"""Answers a fault may take to land before the campaign gives up on the rest."""


class Answered:
    """One answer as its caller received it: sentences, audio per sentence, how it ended."""

    def __init__(self) -> None:
        self.sentences: list[tuple[int, str]] = []
        self.audio: dict[int, bytearray] = {}
        self.arrivals: list[float] = []
        self.ended = "broken"
        self.error = ""

    def on_event(self, event: dict[str, Any]) -> None:
        if event["type"] == "sentence":
            self.sentences.append((event["index"], event["text"]))
        elif event["type"] == "audio":
            self.audio.setdefault(event["index"], bytearray()).extend(event["data"])
            self.arrivals.append(time.monotonic())
        elif event["type"] == "end":
            self.ended = "end"


async def _ask(url: str) -> Answered:
    answered = Answered()
    try:
        await asyncio.wait_for(ask("Before I deploy?", Options(url=url), on_event=answered.on_event), ANSWER_TIMEOUT)
    except CallerError as exc:
        answered.ended, answered.error = "error", str(exc)
    except (StreamBroken, TimeoutError) as exc:
        answered.ended, answered.error = "broken", str(exc) or type(exc).__name__
    return answered


def judge(answered: Answered, reference: Answered) -> dict[str, Any]:
    """How the answer compares with the reference: lost, duplicated and corrupted sentences, and
    whether it recovered or failed cleanly."""
    delivered = Counter(answered.sentences)
    duplicated = sum(count - 1 for count in delivered.values())
    in_order = list(dict.fromkeys(answered.sentences)) == reference.sentences[:len(delivered)]
    corrupted = 0
    for index, _ in delivered:
        got, want = bytes(answered.audio.get(index, b"")), bytes(reference.audio.get(index, b""))
        # An answer that failed may have cut a sentence's audio short, or not begun it: a prefix is whole so far.
        corrupted += got != want if answered.ended == "end" else not want.startswith(got)
    lost = len(reference.sentences) - len(delivered) if answered.ended == "end" else 0
    if answered.ended == "end":
        outcome = "recovered" if not (lost or duplicated or corrupted) and in_order else "damaged"
    elif answered.ended == "error" and answered.error and not duplicated and not corrupted and in_order:
        outcome = "failed_cleanly"
    else:
        outcome = "damaged"
    return {"outcome": outcome, "lost": lost, "duplicated": duplicated, "corrupted": corrupted,
            "in_order": in_order, "error": answered.error}


async def _inject(kind: str, proxy: FaultProxy, tts: dict[str, servers.Server],
                  restart: Callable[[], servers.Server]) -> None:
    if kind == "kill":
        tts["server"].process.kill()
        proxy.injected.append("kill")
        tts["server"] = await asyncio.to_thread(restart)
    else:
        proxy.inject(kind)


async def campaign(answers: int, seed: int = 23, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Answers until ``answers`` of them have had a fault land (the faults in turn, ``KINDS``), each
    at a random moment of its answer; an answer that ended before its moment is judged all the same
    (it must be whole) and its fault is tried again on the next one, up to ``MAX_TRIES`` answers a
    fault."""
    port = servers.free_port()

    def restart() -> servers.Server:
        return servers.start_tts_server(port, extra_args=["--threads", "2"])

    tts = {"server": await asyncio.to_thread(restart)}
    proxy = FaultProxy(port, stall_seconds=STALL_SECONDS)
    await proxy.start()
    env = {"VOICE_AGENT_TTS_TIMEOUT": str(TTS_TIMEOUT), "VOICE_AGENT_TTS_RECONNECTS": str(RECONNECTS)}
    agent = await asyncio.to_thread(servers.start_agent_server, f"ws://127.0.0.1:{proxy.port}/invocations-"
                                    "bidirectional-stream", replay=RECORDING, env=env)
    try:
        await _ask(agent.http_url)  # warm: the reference is an ordinary answer, not the first
        durations, references = [], []
        for _ in range(REFERENCE_ANSWERS):  # the quickest sets the moments: each then falls within an answer
            started = time.monotonic()
            references.append(await _ask(agent.http_url))
            durations.append(time.monotonic() - started)
        reference, reference_seconds = references[0], min(durations)
        if reference.ended != "end":
            raise RuntimeError(f"the reference answer did not complete: {reference.error}")
        return await _run(agent, proxy, tts, restart, reference, reference_seconds, answers, seed, progress)
    finally:
        servers.stop(agent)
        await proxy.close()
        servers.stop(tts["server"])


async def _run(agent: servers.Server, proxy: FaultProxy, tts: dict[str, servers.Server],
               restart: Callable[[], servers.Server], reference: Answered, reference_seconds: float, answers: int,
               seed: int, progress: Callable[[str], None] | None) -> dict[str, Any]:
    rng = random.Random(seed)
    results: list[dict[str, Any]] = []
    recovery_ms: list[tuple[str, float]] = []
    landed = 0
    while landed < answers and len(results) < MAX_TRIES * answers:
        kind = KINDS[landed % len(KINDS)]
        proxy.disarm()  # a fault of an earlier answer that never landed must not land in this one
        injected_before = len(proxy.injected)
        asking = asyncio.create_task(_ask(agent.http_url))
        await asyncio.sleep(rng.uniform(0.1, 0.8 * reference_seconds))
        fault_at = time.monotonic()
        if not asking.done():
            await _inject(kind, proxy, tts, restart)
        answered = await asking
        injected = kind in proxy.injected[injected_before:]
        verdict = {"fault": kind, "injected": injected, **judge(answered, reference)}
        results.append(verdict)
        after = [at for at in answered.arrivals if at > fault_at]
        if injected and verdict["outcome"] == "recovered" and after:
            recovery_ms.append((kind, (after[0] - fault_at) * 1000))
        landed += injected
        if progress and injected and landed % 10 == 0:
            progress(f"faults: {landed} of {answers} landed, in {len(results)} answers")
    return summarise(results, recovery_ms, reference)


def _distribution(values: list[float]) -> dict[str, float | None]:
    summary = summarize(values) if values else {}
    return {key: summary.get(key) for key in ("p50", "p95", "max")}


def summarise(results: list[dict[str, Any]], recovery_ms: list[tuple[str, float]],
              reference: Answered) -> dict[str, Any]:
    injected = [result for result in results if result["injected"]]
    by_kind = {kind: dict(Counter(result["outcome"] for result in injected if result["fault"] == kind))
               for kind in KINDS}
    return {
        "answers": len(results), "injected": len(injected),
        "recovered": sum(result["outcome"] == "recovered" for result in injected),
        "failed_cleanly": sum(result["outcome"] == "failed_cleanly" for result in injected),
        "damaged": sum(result["outcome"] == "damaged" for result in results),
        "sentences_lost": sum(result["lost"] for result in results),
        "sentences_duplicated": sum(result["duplicated"] for result in results),
        "corrupted": sum(result["corrupted"] for result in results),
        "not_injected": len(results) - len(injected),
        "outcomes_by_fault": by_kind,
        "recoverable_failed": sum(result["outcome"] != "recovered" for result in injected
                                  if result["fault"] in RECOVERABLE),
        "recovery_ms": _distribution([ms for _, ms in recovery_ms]),
        "recovery_ms_by_fault": {kind: _distribution([ms for fault, ms in recovery_ms if fault == kind])
                                 for kind in RECOVERABLE},
        "reference_sentences": len(reference.sentences),
        "errors": sorted({result["error"][:160] for result in results if result["error"]}),
    }


def markdown(faults: dict[str, Any]) -> list[str]:
    rows = ["| fault | outcomes (injected answers) |", "|---|---|"]
    rows += [f"| {kind} | {', '.join(f'{outcome} {count}' for outcome, count in outcomes.items()) or '-'} |"
             for kind, outcomes in faults["outcomes_by_fault"].items()]
    recovery = faults["recovery_ms"]
    return [f"Fault campaign: {faults['answers']} answers of {faults['reference_sentences']} chunks, one fault each "
            f"at a random moment ({faults['injected']} landed; {faults['not_injected']} answers ended before theirs "
            f"could): "
            f"recovered {faults['recovered']}, failed cleanly {faults['failed_cleanly']}, damaged {faults['damaged']}; "
            f"sentences lost {faults['sentences_lost']}, duplicated {faults['sentences_duplicated']}, corrupted "
            f"{faults['corrupted']}. From the fault to the next audio of a recovered answer: p50 {recovery['p50']} ms, "
            f"p95 {recovery['p95']} ms, max {recovery['max']} ms.", "", *rows]
