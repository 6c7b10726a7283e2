"""Reliability under load and bad input: what was tried, and what held.

- **load**: 1, 2, 4, 8 and 16 concurrent sessions against one TTS server (started here with
  ``--max-sessions``), each pipelining a multi-sentence answer over the raw protocol. Every accepted
  request must be answered in order with complete audio (the frames add up to what
  ``synthesis_complete`` reports); sessions over the limit must be refused with ``overloaded``;
  the server's peak resident memory is read from ``/proc``.
- **fuzz** (``fuzzing``): 100,000 inputs on each of the TTS WebSocket, the agent's ``/invocations``
  and its ``/ws``, each answered as its protocol module specifies; hangs, crashes, memory.
- **faults** (``faults``): 100 answers through the real agent and TTS server, one fault each at a
  random moment, each judged against an undisturbed reference answer.
- **leaving** and **soak** (``leaving``): callers that leave mid-answer, and 1,000 answers in a row.

The reliability tests (``tests/reliability/``) run the same functions and assert on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import time
from pathlib import Path
from typing import Any

import websockets

import tts_protocol as protocol
from tts_protocol.client import Failed
from voice_agent.bench import faults, fuzzing, leaving, plots, write_results
from voice_agent.dev import servers
from voice_agent.dev.raw_tts import read_answers

SENTENCES = ("Streaming speech starts sooner.", "Each sentence goes out at once.", "The listener hears it early.")
LEVELS = (1, 2, 4, 8, 16)
MAX_SESSIONS = 8
"""The load server's session limit: levels above it must see refusals."""
REPLY_TIMEOUT = 30.0


def memory_mb(pid: int, field: str = "VmHWM") -> float:
    """A process's memory from ``/proc``, in MB: ``VmHWM`` peak resident, ``VmRSS`` resident now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


async def _read_answers(ws: Any, request_ids: list[str], first: Any = None) -> dict[str, Any]:
    """Read one session's answers (starting with ``first`` when it was already read); check order
    and completeness."""
    outcomes, order = await read_answers(ws, request_ids, first=first, timeout=REPLY_TIMEOUT)
    for request_id, outcome in outcomes.items():
        if isinstance(outcome.final, Failed):
            raise AssertionError(f"request {request_id} refused: {outcome.final.code}: {outcome.final.message}")
    return {"in_order": order == request_ids, "complete": all(outcome.complete for outcome in outcomes.values()),
            "audio_bytes": sum(len(outcome.audio) for outcome in outcomes.values())}


async def session(url: str, name: str) -> dict[str, Any]:
    """One session pipelining ``SENTENCES``: its outcome (``refused`` with the server's reason, or
    checked answers)."""
    async with websockets.connect(url, open_timeout=10, max_size=4 * 1024 * 1024) as ws:
        request_ids = [f"{name}-{i}" for i in range(len(SENTENCES))]
        # A refused session's error may already be waiting when a send finds the connection closed.
        with contextlib.suppress(websockets.ConnectionClosed):
            for request_id, text in zip(request_ids, SENTENCES, strict=True):
                await ws.send(protocol.encode_synthesize(protocol.Synthesize(request_id=request_id, text=text)))
        try:
            first = await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
        except websockets.ConnectionClosed as closed:
            return {"refused": True, "code": None, "close_code": closed.rcvd.code if closed.rcvd else None}
        message = protocol.parse_server_message(first)
        if isinstance(message, protocol.Error) and message.request_id is None:
            with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                await asyncio.wait_for(ws.recv(), 5)
            return {"refused": True, "code": message.code, "close_code": ws.close_code}

        result = await _read_answers(ws, request_ids, first)
        return {"refused": False, **result}


async def load_level(url: str, sessions: int) -> dict[str, Any]:
    started = time.perf_counter()
    outcomes = await asyncio.gather(*(session(url, f"s{sessions}-{i}") for i in range(sessions)))
    accepted = [o for o in outcomes if not o["refused"]]
    refused = [o for o in outcomes if o["refused"]]
    return {"sessions": sessions, "accepted": len(accepted), "refused": len(refused),
            "refusal_codes": sorted({str(o["code"]) for o in refused}),
            "all_in_order": all(o["in_order"] for o in accepted),
            "all_complete": all(o["complete"] for o in accepted),
            "requests_answered": len(accepted) * len(SENTENCES),
            "seconds": round(time.perf_counter() - started, 1)}


# The report ----------------------------------------------------------------------------------------


def markdown(results: dict[str, Any]) -> str:
    rows = ["| sessions | accepted | refused (code) | requests answered | in order | complete audio | seconds |",
            "|---|---|---|---|---|---|---|"]
    for level in results["load"]:
        rows.append(f"| {level['sessions']} | {level['accepted']} | {level['refused']} "
                    f"({', '.join(level['refusal_codes']) or '-'}) | {level['requests_answered']} | "
                    f"{level['all_in_order']} | {level['all_complete']} | {level['seconds']} |")
    frame = results["oversize_frame"]
    return "\n".join([
        f"TTS server with --max-sessions {results['max_sessions']}; each session pipelines {len(SENTENCES)} "
        f"sentences; {results['machine']}.", "", *rows, "",
        f"Peak resident memory of the TTS server: {results['peak_rss_mb']} MB.", "",
        f"A 2 MiB frame closed its connection with {frame['close_code']}; the next connection worked: "
        f"{frame['next_connection_works']}.", "",
        *fuzz_markdown(results["fuzz"]), "", *faults.markdown(results["faults"]), "",
        *leaving.markdown(results["leaving"], results["soak"])])


QUICK_LEVELS, QUICK_MAX_SESSIONS, QUICK_FUZZ = (1, 2, 4), 2, 1_000
"""With ``quick``: the load levels, against a server that takes this many sessions (so the last
level still sees refusals), and the fuzz inputs per leg."""
LEAVING, SOAK, FAULT_ANSWERS = 100, 1000, 100
QUICK_LEAVING, QUICK_SOAK, QUICK_FAULT_ANSWERS = 4, 6, 5


async def measure(tts: servers.Server, agent: servers.Server, fuzz_count: int, *, levels: tuple[int, ...],
                  max_sessions: int, leavers: int, soak_answers: int, fault_answers: int,
                  checkpoint: Path | None = None) -> dict[str, Any]:
    """Each part's results are written to ``checkpoint`` (when given) as soon as it ends: a run of
    over an hour that stops in its soak keeps what it measured before."""

    def done(results: dict[str, Any]) -> None:
        if checkpoint is not None:
            checkpoint.write_text(json.dumps(results, indent=2) + "\n")

    load = [await load_level(tts.ws_url, level) for level in levels]
    await fuzzing.until_accepted(tts.ws_url)
    results = {"max_sessions": max_sessions, "load": load, "peak_rss_mb": memory_mb(tts.process.pid),
               "oversize_frame": await fuzzing.oversize_frame(tts.ws_url), "machine": platform.platform()}
    legs = {"tts": await fuzzing.fuzz_tts(tts, fuzz_count), "invocations": await fuzzing.fuzz_agent(agent, fuzz_count),
            "ws": await fuzzing.fuzz_agent_ws(agent, fuzz_count)}
    for name, inputs in (("tts", fuzzing.tts_inputs), ("invocations", fuzzing.agent_inputs), ("ws", fuzzing.ws_inputs)):
        legs[name]["parser_lines_reached"] = fuzzing.parser_coverage(
            inputs(fuzz_count), ("tts_protocol", "caller_protocol"), max(fuzz_count // 10, 1))
    results["fuzz"] = {"frames": sum(leg["frames"] for leg in legs.values()),
                       "crashes": sum(leg["crashes"] for leg in legs.values()),
                       "hangs": sum(leg["hangs"] for leg in legs.values()),
                       "wrong_answers": sum(leg["wrong"] for leg in legs.values()), "legs": legs}
    done(results)
    results["faults"] = await faults.campaign(fault_answers, progress=print)
    done(results)
    results["leaving"] = await leaving.leaving(agent, leavers)
    done(results)
    results["soak"] = await leaving.soak(agent, tts, soak_answers, sample_every=max(1, soak_answers // 100),
                                         progress=print)
    return results


FUZZ_FRAMES = 100_000
"""Fuzz inputs per leg."""


def fuzz_markdown(fuzz: dict[str, Any]) -> list[str]:
    rows = ["| leg | frames | answers by kind | not as specified | hangs | crashes | valid request after | "
            "resident MB before -> after | frames/s |", "|---|---|---|---|---|---|---|---|---|"]
    for name, leg in fuzz["legs"].items():
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in leg["answers"].items())
        rows.append(f"| {name} | {leg['frames']:,} | {kinds} | {leg['wrong']} | {leg['hangs']} | {leg['crashes']} "
                    f"| {leg['valid_request_after']} | {leg['rss_mb_before']} -> {leg['rss_mb_after']} | "
                    f"{leg['frames_per_second']} |")
    curves = "; ".join(f"{name} {leg['parser_lines_reached']}" for name, leg in fuzz["legs"].items())
    return [f"Fuzz: {fuzz['frames']:,} frames over three legs (mutated valid messages, hand-made bad ones, random "
            f"bytes and text); each must get exactly the answer its protocol module specifies.", "", *rows, "",
            f"Lines of the protocol modules' parsers the inputs reached, after each tenth of them: {curves} "
            f"(a flat curve: more inputs find no new path through the parsers; the servers' own paths are not "
            f"counted)."]


def main(out_dir: Path, trials: int = 1, fuzz_count: int = FUZZ_FRAMES, quick: bool = False) -> dict[str, Any]:
    """``trials`` multiplies the fuzz inputs."""
    levels, max_sessions = (QUICK_LEVELS, QUICK_MAX_SESSIONS) if quick else (LEVELS, MAX_SESSIONS)
    out_dir.mkdir(parents=True, exist_ok=True)
    with servers.running(servers.start_tts_server(extra_args=["--max-sessions", str(max_sessions)],
                                                  progress=print, log_path=str(out_dir / "reliability-tts.log"))) \
            as tts:
        # The agent logs each abandoned answer when it has stopped: the caller-leaving figures read it.
        agent = servers.start_agent_server(tts.ws_url, replay="short", log_path=str(out_dir / "reliability-agent.log"),
                                           env={"VOICE_AGENT_DIAGNOSTICS": "1"})
        with servers.running(agent):
            results = asyncio.run(measure(
                tts, agent, QUICK_FUZZ if quick else fuzz_count * trials, levels=levels, max_sessions=max_sessions,
                leavers=QUICK_LEAVING if quick else LEAVING, soak_answers=QUICK_SOAK if quick else SOAK,
                fault_answers=QUICK_FAULT_ANSWERS if quick else FAULT_ANSWERS,
                checkpoint=out_dir / "reliability.partial.json"))
    (out_dir / "reliability.partial.json").unlink(missing_ok=True)
    write_results(out_dir, "reliability", results, markdown(results), plots.reliability)
    return results
