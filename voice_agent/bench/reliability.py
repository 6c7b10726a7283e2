"""Reliability under load and bad input: what was tried, and what held.

- **load**: 1, 2, 4, 8 and 16 concurrent sessions against one TTS server (started here with
  ``--max-sessions``), each pipelining a multi-sentence answer over the raw protocol. Every accepted
  request must be answered in order with complete audio (the frames add up to what
  ``synthesis_complete`` reports); sessions over the limit must be refused with ``overloaded``;
  the server's peak resident memory is read from ``/proc``.
- **fuzz**: random and mutated client messages on one TTS session (text and binary frames, invalid
  UTF-8, deep JSON, wrong types, unknown types, missing fields, oversize messages and frames),
  random agent payloads, and bad messages on one agent ``/ws`` connection. Every bad message must
  get a clear error; a valid request afterwards must still work; the servers must stay up.

The reliability tests (``tests/reliability/``) run the same functions and assert on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import random
import time
from pathlib import Path
from typing import Any

import aiohttp
import websockets

import tts_protocol as protocol
from tts_protocol.client import Failed
from voice_agent.bench import leaving, plots, write_results
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


# Fuzzing -------------------------------------------------------------------------------------------


def _valid(rng: random.Random) -> dict[str, Any]:
    return {"type": "synthesize", "request_id": f"f{rng.randrange(10**9)}", "text": rng.choice(["Hi.", "Yes.", "Ok."])}


def fuzz_messages(count: int, seed: int = 7) -> list[str | bytes]:
    """``count`` bad (or barely valid) client messages: random bytes, invalid UTF-8, deep JSON,
    wrong types, unknown types, missing fields, mutations of a valid message."""
    rng = random.Random(seed)
    wrong_values = [None, 0, -1, 1e308, True, [], {}, "", "x" * 200, float("nan")]
    makers = [
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))),  # random binary
        lambda: b"\xff\xfe" + json.dumps(_valid(rng)).encode(),  # invalid UTF-8
        lambda: "[" * rng.randrange(1_000, 60_000),  # deep JSON
        lambda: '{"a":' * rng.randrange(1_000, 10_000) + "1" + "}" * rng.randrange(0, 10),
        lambda: json.dumps(rng.choice([[], 1, "text", None, [1, 2]])),  # JSON, not an object
        lambda: json.dumps({"type": rng.choice(["dance", "", "SYNTHESIZE", 5, None])}),  # unknown types
        lambda: json.dumps({k: v for k, v in _valid(rng).items() if k != rng.choice(["text", "type"])}),
        lambda: json.dumps({**_valid(rng), rng.choice(["text", "voice", "speed", "request_id", "format"]):
                            rng.choice(wrong_values)}, allow_nan=True),
        lambda: json.dumps({**_valid(rng), "speed": rng.choice([0, 0.1, 99, -3])}),
        lambda: json.dumps({**_valid(rng), "voice": rng.choice(["nobody", "../x", "jf_alpha\x00"])}),
        lambda: json.dumps(_valid(rng))[: rng.randrange(1, 40)],  # truncated
        lambda: json.dumps({**_valid(rng), "text": "x" * (protocol.MAX_TEXT_CHARS + 1)}),
        lambda: json.dumps({**_valid(rng), "pad": "y" * protocol.MAX_MESSAGE_BYTES}),  # oversize message
        lambda: json.dumps({**_valid(rng), "text": rng.choice(["!!!", "...", "\u0007\u0008", "😀😀😀", "   "])}),
    ]
    messages: list[str | bytes] = []
    for _ in range(count):
        message = rng.choice(makers)()
        if isinstance(message, str) and rng.random() < 0.3:
            message = message.encode("utf-8")  # the same as a binary frame
        messages.append(message)
    return messages


async def fuzz_tts(url: str, count: int, seed: int = 7) -> dict[str, Any]:
    """Send each fuzz message on one session and wait for its answer: an error, or (for a message
    that happens to be valid) a complete synthesis. Then a valid request must still work."""
    outcomes: dict[str, int] = {}
    async with websockets.connect(url, open_timeout=10, max_size=4 * 1024 * 1024) as ws:
        for message in fuzz_messages(count, seed):
            await ws.send(message)
            while True:
                reply = protocol.parse_server_message(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT))
                if isinstance(reply, protocol.Error):
                    if not reply.code or not reply.message:
                        raise AssertionError(f"an error without a code or message: {reply}")
                    outcomes[reply.code] = outcomes.get(reply.code, 0) + 1
                    break
                if isinstance(reply, protocol.SynthesisComplete):
                    outcomes["synthesized"] = outcomes.get("synthesized", 0) + 1
                    break
        await ws.send(json.dumps({"type": "synthesize", "request_id": "after", "text": "Still working."}))
        answer = await _read_answers(ws, ["after"])
    return {"inputs": count, "outcomes": dict(sorted(outcomes.items())), "valid_request_after": answer["complete"]}


async def oversize_frame(url: str) -> dict[str, Any]:
    """A frame over the server's frame limit closes that connection (1009); a new one works."""
    async with websockets.connect(url, open_timeout=10, max_size=None) as ws:
        with contextlib.suppress(websockets.ConnectionClosed):
            await ws.send(b"x" * (2 * 1024 * 1024))
            await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
        close_code = ws.close_code
    async with websockets.connect(url, open_timeout=10) as ws:
        await ws.send(json.dumps({"type": "synthesize", "request_id": "next", "text": "Fine."}))
        answer = await _read_answers(ws, ["next"])
    return {"close_code": close_code, "next_connection_works": answer["complete"]}


def fuzz_payloads(count: int, seed: int = 11) -> list[bytes]:
    """Bad agent payloads: not JSON, not an object, wrong types and ranges, unknown fields."""
    rng = random.Random(seed)
    invalid = {  # values each field refuses
        "prompt": [None, 0, True, [], {}, "", "   ", "x" * 4_001],
        "mode": [None, 0, "", "sideways", "BATCH"],
        "voice": [0, "", "../x", "x" * 65, "a b", "nobody"],  # "nobody": well-formed, refused by the TTS
        "speed": [None, "1", True, 0, 0.49, 2.01, 1e9, -1],
        "format": [None, 0, "", "flac", "MP3"],
    }
    makers = [
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))),
        lambda: json.dumps(rng.choice([[], 1, "prompt", None])).encode(),
        lambda: json.dumps({"prompt": rng.choice(invalid["prompt"])}).encode(),
        lambda: json.dumps({"prompt": "Hi.", **{(field := rng.choice(["mode", "voice", "speed", "format"])):
                                                rng.choice(invalid[field])}}).encode(),
        lambda: json.dumps({"prompt": "Hi.", rng.choice(["colour", "Prompt", "__proto__"]): 1}).encode(),
        lambda: ("[" * rng.randrange(1_000, 50_000)).encode(),
        lambda: b'{"prompt": "\xff\xfe"}',
    ]
    return [rng.choice(makers)() for _ in range(count)]


async def fuzz_agent(url: str, count: int, seed: int = 11) -> dict[str, Any]:
    """POST each bad payload: a 4xx or an ``invalid_request`` event; never a 5xx; the agent stays up."""
    outcomes: dict[str, int] = {}
    timeout = aiohttp.ClientTimeout(total=REPLY_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as client:
        for payload in fuzz_payloads(count, seed):
            async with client.post(f"{url}/invocations", data=payload,
                                   headers={"Content-Type": "application/json"}) as response:
                body = await response.read()
                if response.status >= 500:
                    raise AssertionError(f"HTTP {response.status} for {payload[:80]!r}: {body[:300]!r}")
                if response.status == 200:
                    # Refused before any work, or (a well-formed but unknown voice) at the first sentence.
                    last = json.loads(body.decode().strip().split("\n\n")[-1].removeprefix("data: "))
                    if last.get("code") != "invalid_request":
                        raise AssertionError(f"{payload[:80]!r} was not refused: {last}")
                    key = "invalid_request event"
                else:
                    key = f"HTTP {response.status}"
                outcomes[key] = outcomes.get(key, 0) + 1
        async with client.get(f"{url}/ping") as ping:
            alive = ping.status == 200
    return {"inputs": count, "outcomes": outcomes, "alive_after": alive}


def fuzz_ws_messages(count: int, seed: int = 13) -> list[str | bytes]:
    """Bad messages for the agent's ``/ws`` leg: the bad payloads as asks, as raw text and as binary
    frames; unknown, missing and mistyped ``type``; deep JSON; invalid UTF-8."""
    rng = random.Random(seed)
    payloads = fuzz_payloads(count, seed)

    def as_ask(payload: bytes) -> str | bytes:
        with contextlib.suppress(ValueError, RecursionError):
            body = json.loads(payload)
            if isinstance(body, dict):
                return json.dumps({"type": "ask", **body})
        return payload

    makers = [
        lambda i: as_ask(payloads[i]),
        lambda i: payloads[i].decode("utf-8", "replace"),
        lambda i: payloads[i],  # a binary frame
        lambda i: json.dumps({"type": rng.choice(["Ask", "tell", "", None, 1, [], {}]), "prompt": "Hi."}),
        lambda i: json.dumps({"prompt": "Hi."}),  # no type
        # Deep, but under the 64 KiB message limit (over it the connection closes with 1009, tested apart).
        lambda i: rng.choice(["[", '{"type":']) * rng.randrange(1_000, 7_000),
        lambda i: b'{"type": "ask", "prompt": "\xff\xfe"}',
        lambda i: json.dumps({"type": "ask", "prompt": "Hi.", "speed": rng.choice(["fast", -1, 1e9])}),
    ]
    return [rng.choice(makers)(index) for index in range(count)]


async def fuzz_agent_ws(url: str, count: int, seed: int = 13) -> dict[str, Any]:
    """Send each bad message on ONE ``/ws`` connection: each must get an ``error`` event (a refused
    ask may first start its answer, which then ends); then a valid ask on the same connection must
    be answered with audio."""
    ws_url = url.replace("http://", "ws://", 1) + "/ws"
    outcomes: dict[str, int] = {}
    async with websockets.connect(ws_url, max_size=None, open_timeout=REPLY_TIMEOUT) as ws:
        for message in fuzz_ws_messages(count, seed):
            await ws.send(message)
            while True:  # until this message's error; a started answer runs on to its end
                event = json.loads(await asyncio.wait_for(_next_text(ws), REPLY_TIMEOUT))
                if event["type"] == "error":
                    if event["code"] != "invalid_request":
                        raise AssertionError(f"{message[:80]!r}: {event}")
                    key = "refused mid-answer" if event["seq"] not in (None, 0) else \
                        ("unreadable message" if event["seq"] is None else "invalid ask")
                    outcomes[key] = outcomes.get(key, 0) + 1
                    if key != "refused mid-answer":
                        break
                elif event["type"] == "end":
                    break
        await ws.send(json.dumps({"type": "ask", "prompt": "Are you still there?"}))
        audio, kinds = 0, []
        while not kinds or kinds[-1] != "end":
            frame = await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
            if isinstance(frame, bytes):
                audio += len(frame)
            else:
                kinds.append(json.loads(frame)["type"])
    return {"inputs": count, "outcomes": outcomes, "valid_ask_after": audio > 0 and "error" not in kinds,
            "audio_bytes_after": audio}


async def _next_text(ws: Any) -> str:
    while isinstance(message := await ws.recv(), bytes):  # audio of an answer that started
        pass
    return message


# The report ----------------------------------------------------------------------------------------


def markdown(results: dict[str, Any]) -> str:
    rows = ["| sessions | accepted | refused (code) | requests answered | in order | complete audio | seconds |",
            "|---|---|---|---|---|---|---|"]
    for level in results["load"]:
        rows.append(f"| {level['sessions']} | {level['accepted']} | {level['refused']} "
                    f"({', '.join(level['refusal_codes']) or '-'}) | {level['requests_answered']} | "
                    f"{level['all_in_order']} | {level['all_complete']} | {level['seconds']} |")
    tts, agent, frame, ws = results["fuzz_tts"], results["fuzz_agent"], results["oversize_frame"], results["fuzz_ws"]
    return "\n".join([
        f"TTS server with --max-sessions {results['max_sessions']}; each session pipelines {len(SENTENCES)} "
        f"sentences; {results['machine']}.", "", *rows, "",
        f"Peak resident memory of the TTS server: {results['peak_rss_mb']} MB.", "",
        f"TTS protocol fuzz: {tts['inputs']} inputs on one session -> {tts['outcomes']}; a valid request "
        f"afterwards completed: {tts['valid_request_after']}. A 2 MiB frame closed its connection with "
        f"{frame['close_code']}; the next connection worked: {frame['next_connection_works']}.",
        f"Agent payload fuzz: {agent['inputs']} inputs -> {agent['outcomes']}; agent healthy afterwards: "
        f"{agent['alive_after']}.",
        f"Agent /ws fuzz: {ws['inputs']} messages on one connection -> {ws['outcomes']}; a valid ask on the "
        f"same connection afterwards was answered with audio: {ws['valid_ask_after']}.", "",
        *leaving.markdown(results["leaving"], results["soak"])])


QUICK_LEVELS, QUICK_MAX_SESSIONS, QUICK_FUZZ = (1, 2, 4), 2, 100
"""With ``quick``: the load levels, against a server that takes this many sessions (so the last
level still sees refusals), and the fuzz inputs per leg."""
LEAVING, SOAK = 100, 1000
QUICK_LEAVING, QUICK_SOAK = 4, 6


async def measure(tts: servers.Server, agent: servers.Server, fuzz_count: int, *, levels: tuple[int, ...],
                  max_sessions: int, leavers: int, soak_answers: int) -> dict[str, Any]:
    load = [await load_level(tts.ws_url, level) for level in levels]
    results = {"max_sessions": max_sessions, "load": load, "peak_rss_mb": memory_mb(tts.process.pid),
               "fuzz_tts": await fuzz_tts(tts.ws_url, fuzz_count), "oversize_frame": await oversize_frame(tts.ws_url),
               "fuzz_agent": await fuzz_agent(agent.http_url, fuzz_count),
               "fuzz_ws": await fuzz_agent_ws(agent.http_url, fuzz_count), "machine": platform.platform()}
    results["leaving"] = await leaving.leaving(agent, leavers)
    results["soak"] = await leaving.soak(agent, tts, soak_answers, sample_every=max(1, soak_answers // 100),
                                         progress=print)
    return results


def main(out_dir: Path, trials: int = 1, fuzz_count: int = 400, quick: bool = False) -> dict[str, Any]:
    """``trials`` multiplies the fuzz inputs (400 each)."""
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
                leavers=QUICK_LEAVING if quick else LEAVING, soak_answers=QUICK_SOAK if quick else SOAK))
    write_results(out_dir, "reliability", results, markdown(results), plots.reliability)
    return results
