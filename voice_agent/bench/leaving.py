"""The caller leaving, and answers by the thousand: what an answer leaves behind in the agent.

- **leaving**: callers that disconnect at random moments of their answer, on both legs. For each,
  the time from the caller closing its connection to the last of the answer's work stopping (its
  model stream closed, its TTS session closed, its stages ended): the agent logs an abandoned
  answer once that is so, and the log line's time (the same machine's clock, to the millisecond)
  against the moment the caller closed is the figure. Afterwards the agent's asyncio tasks and open
  descriptors must be back where they were.
- **soak**: many short answers back to back through one agent and one TTS server, alternating SSE
  and ``/ws``, some cancelled, some abandoned by their callers, sampling both processes' resident
  memory and open descriptors and the agent's asyncio tasks (``GET /diagnostics``).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import websockets

from caller_protocol import INVOCATIONS_PATH, WS_PATH, VoiceRequest, encode_ask, encode_cancel, events
from voice_agent.dev import servers

ABANDONED = "answer abandoned by the caller"
"""What the agent logs once every part of an abandoned answer has stopped (``agent.pipeline``)."""
STOP_WAIT = 10.0
"""Seconds to wait for an abandoned answer's log line before counting it as never stopped."""
SETTLE = 5.0
"""Seconds the agent may take to return to its baseline of tasks and descriptors."""
CALLER_TIMEOUT = 60.0
"""Seconds one caller's whole exchange may take (a short answer takes 3-4 s); beyond it the
exchange is abandoned and counted as hung."""


async def _bounded(exchange: Awaitable[float | None]) -> float | None | str:
    """The exchange's result, or "hung" when it took over :data:`CALLER_TIMEOUT` seconds."""
    try:
        return await asyncio.wait_for(exchange, CALLER_TIMEOUT)
    except TimeoutError:
        return "hung"


async def diagnostics(agent: servers.Server) -> dict[str, Any]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        async with session.get(f"{agent.http_url}/diagnostics") as response:
            return await response.json()


async def settled(agent: servers.Server, baseline: dict[str, Any]) -> dict[str, Any]:
    """The agent's diagnostics once no answer runs and its tasks and descriptors are back at the
    baseline, or as they are after :data:`SETTLE` seconds."""
    deadline = time.monotonic() + SETTLE
    while True:
        state = await diagnostics(agent)
        back = state["tasks"] <= baseline["tasks"] and state["open_fds"] <= baseline["open_fds"]
        if (state["answers"] == 0 and back) or time.monotonic() > deadline:
            return state
        await asyncio.sleep(0.05)


def abandoned_at(log_path: Path) -> list[float]:
    """When each abandoned answer had stopped, from the agent's log (epoch seconds)."""
    times = []
    for line in log_path.read_text(errors="replace").splitlines():
        if ABANDONED in line:
            stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
            times.append(stamp.timestamp())
    return times


async def _sse(url: str, leave_after: float | None, prompt: str = "Go.") -> float | None:
    """Ask over SSE; close the connection ``leave_after`` seconds after asking (None: read to the
    end). The moment it closed (epoch seconds), or None when the answer had ended before."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        async with session.post(f"{url}{INVOCATIONS_PATH}", json={"prompt": prompt}) as response:
            deadline = time.monotonic() + (leave_after if leave_after is not None else 120)
            while True:
                try:
                    line = await asyncio.wait_for(response.content.readline(), max(deadline - time.monotonic(), 0))
                except TimeoutError:
                    response.close()  # drops the connection mid-answer
                    return time.time()
                if not line:
                    return None


async def _ws(url: str, leave_after: float | None, *, cancel_after: float | None = None) -> float | None:
    """Ask over ``/ws``; with ``cancel_after``, send ``cancel`` then and read to the end; with
    ``leave_after``, close the connection then. The moment it closed, or None."""
    async with websockets.connect(url.replace("http", "ws", 1) + WS_PATH, max_size=2 ** 22) as ws:
        await ws.send(encode_ask(VoiceRequest(prompt="Go.")))
        began = time.monotonic()
        cancelled = False
        while True:
            limit = leave_after if leave_after is not None else (cancel_after if not cancelled else None)
            wait = 120 if limit is None else max(began + limit - time.monotonic(), 0)
            try:
                message = await asyncio.wait_for(ws.recv(), wait)
            except TimeoutError:
                if leave_after is not None:
                    ws.transport.abort()  # gone without a closing handshake, as a dropped network is
                    return time.time()
                await ws.send(encode_cancel())
                cancelled = True
                continue
            if isinstance(message, str) and json.loads(message)["type"] in events.TERMINAL:
                return None


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p99": round(p99, 1), "max": round(ordered[-1], 1)}


async def leaving(agent: servers.Server, count: int, seed: int = 17) -> dict[str, Any]:
    """``count`` callers that leave at a random moment of their answer, alternating SSE and ``/ws``."""
    log_path = Path(str(agent.log_path))
    await _bounded(_sse(agent.http_url, None))  # whole answers first: pools and lazily made parts exist
    await _bounded(_ws(agent.http_url, None))
    started = time.monotonic()
    await _bounded(_sse(agent.http_url, None))  # its length bounds the moments
    answer_seconds = time.monotonic() - started
    baseline = await settled(agent, await diagnostics(agent))
    rng = random.Random(seed)
    stops: list[float] = []
    ended_first = never_stopped = hung = 0
    for index in range(count):
        leave_after = rng.uniform(0.05, 0.9 * answer_seconds)
        before = len(abandoned_at(log_path))
        closed = await _bounded((_sse if index % 2 == 0 else _ws)(agent.http_url, leave_after))
        if closed is None:
            ended_first += 1
            continue
        if closed == "hung":
            hung += 1
            continue
        deadline = time.monotonic() + STOP_WAIT
        while len(times := abandoned_at(log_path)) <= before and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if len(times) <= before:
            never_stopped += 1
            continue
        stops.append(max(times[-1] - closed, 0.0) * 1000)
    after = await settled(agent, baseline)
    return {"callers": count, "left_mid_answer": len(stops), "answer_ended_first": ended_first,
            "never_stopped": never_stopped, "hung": hung, "answers_left_running": after["answers"],
            "answer_seconds": round(answer_seconds, 2),
            "stop_ms": _percentiles(stops), "stop_ms_all": [round(value, 1) for value in stops],
            "leaked_tasks": max(after["tasks"] - baseline["tasks"], 0),
            "leaked_fds": max(after["open_fds"] - baseline["open_fds"], 0), "baseline": baseline, "after": after}


def _process(pid: int) -> dict[str, float]:
    status = {line.split(":")[0]: line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
              if line.startswith(("VmRSS:", "VmHWM:"))}
    return {"rss_mb": round(int(status["VmRSS"]) / 1024, 1), "open_fds": len(list(Path(f"/proc/{pid}/fd").iterdir()))}


async def soak(agent: servers.Server, tts: servers.Server, answers: int, sample_every: int = 10,
               progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """``answers`` short answers back to back: SSE and ``/ws`` in turn; every 10th cancelled on
    ``/ws`` after 0.5 s, every 10th (offset by 5) abandoned by its caller after 0.5 s."""
    await _bounded(_sse(agent.http_url, None))
    await _bounded(_ws(agent.http_url, None))
    samples = []
    started = time.monotonic()

    async def sample(done: int) -> None:
        state = await settled(agent, samples[0]["agent"] if samples else await diagnostics(agent))
        samples.append({"answers": done, "seconds": round(time.monotonic() - started, 1), "agent": state,
                        "agent_process": _process(agent.process.pid), "tts_process": _process(tts.process.pid)})

    await sample(0)
    kinds = {"whole": 0, "cancelled": 0, "abandoned": 0, "hung": 0}
    for index in range(1, answers + 1):
        run: Awaitable[Any]
        if index % 10 == 0:
            run, kind = _ws(agent.http_url, None, cancel_after=0.5), "cancelled"
        elif index % 10 == 5:
            run, kind = (_sse if index % 20 == 5 else _ws)(agent.http_url, 0.5), "abandoned"
        else:
            run, kind = (_sse if index % 2 else _ws)(agent.http_url, None), "whole"
        kinds["hung" if await _bounded(run) == "hung" else kind] += 1
        if index % sample_every == 0 or index == answers:
            await sample(index)
            if progress and index % (sample_every * 10) == 0:
                progress(f"soak: {index} of {answers} answers, agent {samples[-1]['agent_process']['rss_mb']} MB")
    first, last = samples[0], samples[-1]
    return {"answers": answers, "kinds": kinds, "seconds": last["seconds"], "samples": samples,
            "rss_growth_mb": round(last["agent_process"]["rss_mb"] - first["agent_process"]["rss_mb"], 1),
            "tts_rss_growth_mb": round(last["tts_process"]["rss_mb"] - first["tts_process"]["rss_mb"], 1),
            # The agent's own count: /proc read from here may still see the diagnostics request's socket.
            "fd_growth": last["agent"]["open_fds"] - first["agent"]["open_fds"],
            "tts_fd_growth": last["tts_process"]["open_fds"] - first["tts_process"]["open_fds"],
            "task_growth": last["agent"]["tasks"] - first["agent"]["tasks"],
            "answers_left_running": last["agent"]["answers"]}


def markdown(left: dict[str, Any], soaked: dict[str, Any]) -> list[str]:
    stop = left["stop_ms"]
    return [
        f"The caller leaving: {left['callers']} callers (SSE and /ws in turn) left at a random moment of a "
        f"{left['answer_seconds']} s answer; {left['left_mid_answer']} left mid-answer "
        f"({left['answer_ended_first']} answers had ended first). From the caller closing its connection to the "
        f"answer's model stream, TTS session and stages all stopped: p50 {stop['p50']} ms, p99 {stop['p99']} ms, "
        f"max {stop['max']} ms; never stopped: {left['never_stopped']}; callers hung: {left['hung']}. Left behind "
        f"in the agent: {left['leaked_tasks']} tasks, {left['leaked_fds']} descriptors, {left['answers_left_running']} "
        f"answers still running.", "",
        f"Soak: {soaked['answers']} answers back to back in {soaked['seconds']} s ({soaked['kinds']['whole']} whole, "
        f"{soaked['kinds']['cancelled']} cancelled, {soaked['kinds']['abandoned']} abandoned, "
        f"{soaked['kinds']['hung']} hung; SSE and /ws in turn; answers still running at the end: "
        f"{soaked['answers_left_running']}). "
        f"Growth from first to last sample: agent resident memory {soaked['rss_growth_mb']} MB, descriptors "
        f"{soaked['fd_growth']}, asyncio tasks {soaked['task_growth']}; TTS server resident memory "
        f"{soaked['tts_rss_growth_mb']} MB, descriptors {soaked['tts_fd_growth']}."]
