"""Fuzzing the three doors the servers open: the TTS WebSocket, the agent's ``/invocations`` and its
``/ws``, with inputs from ``mutations`` (mutated valid messages, hand-made bad ones, random ones).

Every input must get exactly one answer, and the one the leg's own protocol module says it should:
the TTS server's error code is the one ``tts_protocol.parse_client_message`` raises (or, for a
message it accepts, a synthesis, ``unknown_voice`` or ``empty_text``: the server knows its voices
and what of a text can be spoken); the agent refuses what
``VoiceRequest.from_payload`` / ``parse_ws_message`` refuse, and answers what they accept. A reply
that does not come within ``REPLY_TIMEOUT`` is a hang (the connection is then replaced); a server
process that ends is a crash. Afterwards a valid request must still work.

Valid messages are the slow path (a synthesis, an answer) and the fuzz is about the parsers, so
only one input in ``VALID_EVERY`` may be valid; a valid ask is cancelled (``/ws``) or abandoned
(``/invocations``) once it has started."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import websockets

import tts_protocol as protocol
from caller_protocol import (
    INVOCATIONS_PATH,
    MAX_PAYLOAD_BYTES,
    WS_PATH,
    Ask,
    RequestError,
    UnreadableMessage,
    VoiceRequest,
    encode_cancel,
    events,
    parse_ws_message,
)
from voice_agent.bench.mutations import Mutator, random_input
from voice_agent.dev import servers

REPLY_TIMEOUT = 30.0
VALID_EVERY = 500
"""At most one input in this many is a valid request: synthesis and answers are slow, parsing is not."""
SHORT_TEXT = 40
"""A valid synthesize input is sent only with a text this short."""
SYNTHESIZED = "synthesized"
ANSWERED = "answered"


@dataclass
class Tally:
    """What one leg's fuzz saw."""

    frames: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    wrong: int = 0
    """Inputs whose answer was not the one the protocol specifies."""
    wrong_examples: list[str] = field(default_factory=list)
    """The first 20 of them."""
    hangs: int = 0
    crashes: int = 0
    valid_after: bool = False
    rss_mb_before: float = 0.0
    rss_mb_after: float = 0.0
    seconds: float = 0.0

    def expect(self, sent: str | bytes, expected: set[str], got: str) -> None:
        self.answers[got] += 1
        if got not in expected:
            self.wrong += 1
            if len(self.wrong_examples) < 20:
                self.wrong_examples.append(f"{_shown(sent)} -> {got}, expected {sorted(expected)}")

    def report(self) -> dict[str, Any]:
        return {"frames": self.frames, "answers": dict(sorted(self.answers.items())), "wrong": self.wrong,
                "wrong_examples": self.wrong_examples,
                "hangs": self.hangs, "crashes": self.crashes, "valid_request_after": self.valid_after,
                "rss_mb_before": self.rss_mb_before, "rss_mb_after": self.rss_mb_after,
                "frames_per_second": round(self.frames / self.seconds, 1) if self.seconds else 0.0}


def _shown(sent: str | bytes) -> str:
    return repr(sent[:60]) + ("..." if len(sent) > 60 else "")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _inputs(count: int, seed: int, mutator: Mutator, handmade: list[Callable[[], str | bytes]],
            classify: Callable[[str | bytes], set[str] | None], valid: set[str]) -> Iterator[tuple[Any, set[str]]]:
    """``count`` inputs with the answers each may get; ``classify`` returns None for an input that
    gets no answer (a bare cancel), which is not sent. Valid inputs are capped (``VALID_EVERY``)."""
    rng = random.Random(seed)
    made = valid_made = 0
    while made < count:
        roll = rng.random()
        sent = mutator() if roll < 0.6 else rng.choice(handmade)() if roll < 0.9 else random_input(rng)
        expected = classify(sent)
        if expected is None or (expected & valid and (valid_made + 1) * VALID_EVERY > made + VALID_EVERY):
            continue
        valid_made += bool(expected & valid)
        made += 1
        yield sent, expected


# The TTS WebSocket ---------------------------------------------------------------------------------


def _synthesize(rng: random.Random) -> dict[str, Any]:
    return {"type": "synthesize", "request_id": f"f{rng.randrange(10 ** 9)}", "text": rng.choice(["Hi.", "Ok."]),
            "voice": rng.choice(["jf_gongitsune", "jm_kumo"]), "speed": rng.choice([0.8, 1.0, 1.5]),
            "format": "pcm16"}


def tts_inputs(count: int, seed: int = 7) -> Iterator[tuple[str | bytes, set[str]]]:
    rng = random.Random(seed)
    seeds = [_synthesize(rng) for _ in range(8)] + [{"text": "Hello."}]
    handmade: list[Callable[[], str | bytes]] = [
        lambda: "[" * rng.randrange(1_000, 60_000),  # nested deeper than any parser goes
        lambda: '{"a":' * rng.randrange(1_000, 10_000) + "1",
        lambda: json.dumps({**_synthesize(rng), "text": "x" * (protocol.MAX_TEXT_CHARS + 1)}),
        lambda: json.dumps({**_synthesize(rng), "pad": "y" * protocol.MAX_MESSAGE_BYTES}),  # over the message limit
        lambda: json.dumps({**_synthesize(rng), "text": rng.choice(["!!!", "...", "\u0007\u0008", "   "])}),
        lambda: json.dumps({**_synthesize(rng), "voice": rng.choice(["nobody", "../x", "jf_alpha\x00"])}),
        lambda: b"\xff\xfe" + json.dumps(_synthesize(rng)).encode(),
    ]

    def classify(sent: str | bytes) -> set[str] | None:
        try:
            message = protocol.parse_client_message(sent, default_request_id="fuzz")
        except protocol.ProtocolError as error:
            return {error.code}
        if not isinstance(message, protocol.Synthesize) or len(message.text) > SHORT_TEXT:
            return None  # cancel answers nothing; close ends the session under test; long texts are slow
        # Which voices exist, and whether anything of the text can be spoken (not only punctuation,
        # emoji or control characters), are the server's to say.
        return {SYNTHESIZED, protocol.UNKNOWN_VOICE, protocol.EMPTY_TEXT}

    return _inputs(count, seed, Mutator(seeds, rng, 2 * protocol.MAX_MESSAGE_BYTES), handmade, classify,
                   {SYNTHESIZED})


async def _tts_answer(ws: Any) -> str:
    while True:
        reply = protocol.parse_server_message(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT))
        if isinstance(reply, protocol.Error):
            return reply.code if reply.code and reply.message else "error without a code or message"
        if isinstance(reply, protocol.SynthesisComplete):
            return SYNTHESIZED


async def until_accepted(url: str, within: float = 10.0) -> None:
    """Wait until the TTS server takes a new session and answers it: the sessions of a load test just
    ended are released a moment after their clients closed, and until then a new one is refused
    (``overloaded``) on a server with a low session limit."""
    deadline = time.monotonic() + within
    while True:
        async with websockets.connect(url, open_timeout=10) as ws:
            await ws.send(protocol.encode_synthesize(protocol.Synthesize(request_id="probe", text="Ready?")))
            with contextlib.suppress(websockets.ConnectionClosed):
                if await _tts_answer(ws) == SYNTHESIZED:
                    return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the TTS server at {url} took no new session within {within:.0f} s")
        await asyncio.sleep(0.2)


async def oversize_frame(url: str) -> dict[str, Any]:
    """A frame over the server's frame limit closes that connection (1009); a new one works."""
    async with websockets.connect(url, open_timeout=10, max_size=None) as ws:
        with contextlib.suppress(websockets.ConnectionClosed):
            await ws.send(b"x" * (2 * 1024 * 1024))
            await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
        close_code = ws.close_code
    async with websockets.connect(url, open_timeout=10) as ws:
        await ws.send(protocol.encode_synthesize(protocol.Synthesize(request_id="next", text="Fine.")))
        works = await _tts_answer(ws) == SYNTHESIZED
    return {"close_code": close_code, "next_connection_works": works}


async def fuzz_tts(tts: servers.Server, count: int, seed: int = 7) -> dict[str, Any]:
    """Every input on one session (a new one after a hang), each answered before the next is sent."""
    after = protocol.encode_synthesize(protocol.Synthesize(request_id="after", text="Still working."))
    return await _fuzz_websocket(tts, tts.ws_url, tts_inputs(count, seed), _tts_answer, after, SYNTHESIZED)


async def _fuzz_websocket(server: servers.Server, url: str, inputs: Iterator[tuple[Any, set[str]]],
                          answer: Callable[[Any], Any], after: str, answered_after: str) -> dict[str, Any]:
    """Send each input on one connection and read its answer (``answer``); then ``after``, a valid
    request, must be answered ``answered_after``."""
    tally = Tally(rss_mb_before=_rss_mb(server.process.pid))
    started = time.monotonic()
    ws = await websockets.connect(url, open_timeout=10, max_size=None)
    try:
        for sent, expected in inputs:
            tally.frames += 1
            await ws.send(sent)
            try:
                tally.expect(sent, expected, await answer(ws))
            except (TimeoutError, websockets.ConnectionClosed):
                if server.died():
                    tally.crashes += 1
                    break
                tally.hangs += 1
                await ws.close()
                ws = await websockets.connect(url, open_timeout=10, max_size=None)
        await ws.send(after)
        tally.valid_after = await answer(ws) == answered_after
    finally:
        with contextlib.suppress(Exception):
            await ws.close()
    tally.seconds, tally.rss_mb_after = time.monotonic() - started, _rss_mb(server.process.pid)
    return tally.report()


# The agent's two legs ------------------------------------------------------------------------------


def _payload(rng: random.Random) -> dict[str, Any]:
    return {"prompt": rng.choice(["Hi.", "What is streaming?"]), "mode": rng.choice(["incremental", "batch"]),
            "voice": "jf_gongitsune", "speed": rng.choice([0.75, 1.0, 1.25]), "format": rng.choice(["pcm16", "mp3"])}


def _request_outcome(body: Any) -> set[str]:
    try:
        VoiceRequest.from_payload(body)
    except RequestError:
        return {events.INVALID_REQUEST}
    return {ANSWERED}


def agent_inputs(count: int, seed: int = 11) -> Iterator[tuple[bytes, set[str]]]:
    """Bodies for ``POST /invocations``: "HTTP 400" (not JSON), "HTTP 413" (over the limit),
    ``invalid_request`` (one error event) or an answer."""
    rng = random.Random(seed)
    handmade: list[Callable[[], str | bytes]] = [
        lambda: ("[" * rng.randrange(1_000, 50_000)).encode(),
        lambda: json.dumps({"prompt": "x" * 4_001}).encode(),
        lambda: json.dumps({"prompt": "Hi.", "pad": "y" * MAX_PAYLOAD_BYTES}).encode(),
        lambda: b'{"prompt": "\xff\xfe"}',
    ]

    def classify(sent: str | bytes) -> set[str]:
        body = sent.encode() if isinstance(sent, str) else sent
        if len(body) > MAX_PAYLOAD_BYTES:
            return {"HTTP 413"}
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return {"HTTP 400"}
        return _request_outcome(parsed)

    inputs = _inputs(count, seed, Mutator([_payload(rng) for _ in range(8)], rng, 2 * MAX_PAYLOAD_BYTES), handmade,
                     classify, {ANSWERED})
    return ((sent.encode() if isinstance(sent, str) else sent, expected) for sent, expected in inputs)


async def _post(client: aiohttp.ClientSession, url: str, body: bytes) -> str:
    """The answer's kind; an answer that starts is abandoned at its first event."""
    async with client.post(f"{url}{INVOCATIONS_PATH}", data=body, headers={"Content-Type": "application/json"}) \
            as response:
        if response.status != 200:
            await response.read()
            return f"HTTP {response.status}"
        line = await response.content.readline()
        event = json.loads(line.decode().removeprefix("data: "))
        if event["type"] == events.START:
            response.close()  # the agent abandons the answer: what is tested is that it was taken
            return ANSWERED
        return event.get("code", event["type"])


async def fuzz_agent(agent: servers.Server, count: int, seed: int = 11) -> dict[str, Any]:
    tally = Tally(rss_mb_before=_rss_mb(agent.process.pid))
    started = time.monotonic()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REPLY_TIMEOUT)) as client:
        for sent, expected in agent_inputs(count, seed):
            tally.frames += 1
            try:
                tally.expect(sent, expected, await _post(client, agent.http_url, sent))
            except (TimeoutError, aiohttp.ClientError):
                if agent.died():
                    tally.crashes += 1
                    break
                tally.hangs += 1
        tally.valid_after = await _post(client, agent.http_url, b'{"prompt": "Still there?"}') == ANSWERED
    tally.seconds, tally.rss_mb_after = time.monotonic() - started, _rss_mb(agent.process.pid)
    return tally.report()


def ws_inputs(count: int, seed: int = 13) -> Iterator[tuple[str | bytes, set[str]]]:
    """``/ws`` messages: "unreadable" (an error with a null ``seq``), ``invalid_request`` (an ask
    refused: an error with ``seq`` 0) or an answer."""
    rng = random.Random(seed)
    seeds = [{"type": "ask", **_payload(rng)} for _ in range(8)] + [{"type": "cancel", "played_ms": 10}]
    handmade: list[Callable[[], str | bytes]] = [
        lambda: rng.choice(["[", '{"type":']) * rng.randrange(1_000, 7_000),
        lambda: b'{"type": "ask", "prompt": "\xff\xfe"}',
        lambda: json.dumps({"type": rng.choice(["Ask", "tell", "", None, 1, [], {}]), "prompt": "Hi."}),
    ]

    def classify(sent: str | bytes) -> set[str] | None:
        try:
            message = parse_ws_message(sent)
        except UnreadableMessage:
            return {"unreadable"}
        except RequestError:
            return {events.INVALID_REQUEST}
        return {ANSWERED} if isinstance(message, Ask) else None  # a cancel while idle answers nothing

    # Under the message limit: over it the connection closes (1009), tested apart.
    return _inputs(count, seed, Mutator(seeds, rng, MAX_PAYLOAD_BYTES - 1), handmade, classify, {ANSWERED})


async def _ws_answer(ws: Any) -> str:
    """The answer to the message just sent; an answer that starts is cancelled and read to its end."""
    while True:
        message = await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
        if isinstance(message, bytes):
            continue  # audio of an answer being cancelled
        event = json.loads(message)
        if event["type"] == events.ERROR and event["seq"] in (None, 0):
            return "unreadable" if event["seq"] is None else event["code"]
        if event["type"] == events.START:
            await ws.send(encode_cancel())
        elif event["type"] in events.TERMINAL:
            return ANSWERED


async def fuzz_agent_ws(agent: servers.Server, count: int, seed: int = 13) -> dict[str, Any]:
    """Every message on one ``/ws`` connection (a new one after a hang), each answered before the next."""
    url = agent.http_url.replace("http", "ws", 1) + WS_PATH
    after = json.dumps({"type": "ask", "prompt": "Are you still there?"})
    return await _fuzz_websocket(agent, url, ws_inputs(count, seed), _ws_answer, after, ANSWERED)


def parser_coverage(inputs: Iterator[tuple[Any, set[str]]], packages: tuple[str, ...], every: int) -> list[int]:
    """Lines of ``packages`` (the protocol modules, whose parsers judge each input) that the inputs
    have reached, after each ``every`` of them: when the curve is flat, more inputs of this generator
    find no new path through the parsers. Measured in this process with ``sys.monitoring``."""
    import sys

    monitoring = sys.monitoring
    tool = monitoring.PROFILER_ID
    roots = tuple(str(Path(__import__(package).__file__).parent) for package in packages)
    reached: set[tuple[str, int]] = set()

    def line(code: Any, number: int) -> Any:
        if not code.co_filename.startswith(roots):
            return monitoring.DISABLE
        reached.add((code.co_filename, number))
        return None

    curve = []
    monitoring.use_tool_id(tool, "voice-agent fuzz coverage")
    monitoring.register_callback(tool, monitoring.events.LINE, line)
    monitoring.set_events(tool, monitoring.events.LINE)
    try:
        for index, _ in enumerate(inputs, 1):
            if index % every == 0:
                curve.append(len(reached))
    finally:
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, monitoring.events.LINE, None)
        monitoring.free_tool_id(tool)
    return curve
