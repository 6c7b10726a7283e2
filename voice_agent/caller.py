"""The caller's side of leg 1: ask the agent over HTTP and reassemble its SSE answer, or over the
binary WebSocket leg ``/ws``.

The response is ``text/event-stream``; its bytes may be split anywhere by the transport (inside a
``data:`` line, inside a multi-byte character, between ``\\r`` and ``\\n``), so events are decoded
incrementally by :class:`SSEDecoder`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import boto3
import botocore.config
import botocore.exceptions
import urllib3.exceptions
import websockets

import tts_protocol
from agent import events
from agent.audio_encoding import DEFAULT_FORMAT

DEFAULT_TIMEOUT = 300.0
"""Seconds an answer may take in total."""
DEFAULT_READ_TIMEOUT = 60.0
"""Seconds without a byte from the agent before giving up."""
MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longest SSE line accepted (a Base64 audio event of a long batch answer is a few MB)."""


class CallerError(RuntimeError):
    pass


class StreamBroken(CallerError):
    """The connection to the agent ended before the answer's ``end`` or ``error`` event."""


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder: feed bytes as they arrive, get each event's data.

    Follows the SSE rules the agent's stream uses: lines end in ``\\n`` or ``\\r\\n``; ``data:``
    lines (one optional space after the colon) accumulate, joined by ``\\n``; a blank line
    dispatches the event; lines starting with ``:`` are comments; other fields are ignored.
    """

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._pending = bytearray()
        self._data: list[str] = []
        self._max_line_bytes = max_line_bytes

    def feed(self, chunk: bytes) -> list[str]:
        self._pending += chunk
        dispatched: list[str] = []
        while (newline := self._pending.find(b"\n")) >= 0:
            raw = bytes(self._pending[:newline])
            del self._pending[:newline + 1]
            line = raw.removesuffix(b"\r").decode("utf-8")
            if not line:
                if self._data:
                    dispatched.append("\n".join(self._data))
                    self._data = []
            elif line.startswith(":"):
                continue
            else:
                name, _, value = line.partition(":")
                if name == "data":
                    self._data.append(value.removeprefix(" "))
        if len(self._pending) > self._max_line_bytes:
            raise CallerError(f"an SSE line exceeds {self._max_line_bytes} bytes")
        return dispatched

    def close(self) -> None:
        """End of stream: an event not terminated by a blank line is an error, not silently dropped."""
        if self._pending.strip() or self._data:
            raise CallerError("the event stream ended in the middle of an event")


@dataclass
class Answer:
    """One answer as the caller received it; times are milliseconds from sending the request."""

    mode: str
    format: str = DEFAULT_FORMAT
    text: str = ""
    audio: bytearray = field(default_factory=bytearray)
    """The answer's audio stream, in ``format`` (raw samples for ``pcm16``)."""
    sample_rate: int = tts_protocol.SAMPLE_RATE
    sentences: dict[int, str] = field(default_factory=dict)
    audio_by_sentence: dict[int, int] = field(default_factory=dict)
    """Bytes of audio received per sentence index."""
    event_types: list[str] = field(default_factory=list)
    time_to_first_text_ms: float | None = None
    time_to_first_audio_ms: float | None = None
    total_ms: float | None = None
    cancel_sent_ms: float | None = None
    """When the caller sent ``cancel`` (WebSocket leg only)."""
    server_metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def audio_seconds(self) -> float:
        """Seconds of speech: counted from the samples for ``pcm16``, else as the agent reports it."""
        if self.format == tts_protocol.FORMAT_PCM16:
            return tts_protocol.pcm16_seconds(len(self.audio), self.sample_rate)
        return float(self.server_metrics.get("audio_seconds") or 0.0)

    def received(self) -> str:
        """What arrived so far, for an error message: the text's length and the audio's duration."""
        audio = (f"{self.audio_seconds:.1f} s of audio" if self.format == tts_protocol.FORMAT_PCM16
                 else f"{len(self.audio):,} bytes of {self.format} audio")
        return f"received so far: {len(self.text)} characters of text and {audio}"

    def summary(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "format": self.format,
            "time_to_first_text_ms": self.time_to_first_text_ms,
            "time_to_first_audio_ms": self.time_to_first_audio_ms,
            "total_ms": self.total_ms,
            "audio_seconds": round(self.audio_seconds, 3),
            "sentences": len(self.sentences),
            "text": self.text,
            "server": self.server_metrics,
        }


def _payload(prompt: str, mode: str, voice: str | None, speed: float | None, fmt: str) -> dict[str, Any]:
    payload: dict[str, Any] = {"prompt": prompt, "mode": mode}
    if fmt != DEFAULT_FORMAT:
        payload["format"] = fmt
    if voice is not None:
        payload["voice"] = voice
    if speed is not None:
        payload["speed"] = speed
    return payload


class _Collector:
    """Bytes of an SSE answer in, whatever their chunking; the :class:`Answer` out."""

    def __init__(self, mode: str, fmt: str, on_event: Callable[[dict[str, Any]], None] | None) -> None:
        self.answer = Answer(mode=mode, format=fmt)
        self._decoder = SSEDecoder()
        self._on_event = on_event
        self._started = time.perf_counter()

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self._started) * 1000, 1)

    def feed(self, chunk: bytes) -> None:
        for data in self._decoder.feed(chunk):
            self.apply(_parse_event(data))

    def apply(self, event: dict[str, Any]) -> None:
        _apply(self.answer, event, self.elapsed_ms)
        if self._on_event is not None:
            self._on_event(event)

    def finish(self) -> Answer:
        if not self.answer.event_types or self.answer.event_types[-1] not in events.TERMINAL:
            raise self.broken()
        self._decoder.close()
        self.answer.total_ms = self.elapsed_ms()
        return self.answer

    def broken(self, cause: BaseException | None = None) -> StreamBroken:
        """The error for a stream that ended before the answer's ``end`` or ``error`` event."""
        because = f" ({cause})" if cause is not None and str(cause) else ""
        return StreamBroken(f"the agent closed the stream before the answer ended{because}; "
                           f"{self.answer.received()}")


async def ask(url: str, prompt: str, *, mode: str = "incremental", voice: str | None = None,
              speed: float | None = None, fmt: str = DEFAULT_FORMAT, session_id: str | None = None,
              timeout: float = DEFAULT_TIMEOUT, read_timeout: float = DEFAULT_READ_TIMEOUT,
              on_event: Callable[[dict[str, Any]], None] | None = None) -> Answer:
    """POST the prompt to ``{url}/invocations`` and collect the streamed answer.

    Raises :class:`CallerError` for an HTTP error, a malformed stream, or an ``error`` event.
    """
    collector = _Collector(mode, fmt, on_event)
    client_timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=10, sock_read=read_timeout)
    async with aiohttp.ClientSession(timeout=client_timeout) as session:
        async with session.post(f"{url.rstrip('/')}/invocations", json=_payload(prompt, mode, voice, speed, fmt),
                                headers={"Accept": "text/event-stream", **_session_header(session_id)}) as response:
            if response.status != 200 or not response.content_type.startswith("text/event-stream"):
                body = (await response.read())[:2000].decode("utf-8", "replace")
                raise CallerError(f"agent answered HTTP {response.status} ({response.content_type}): {body}")
            try:
                async for chunk in response.content.iter_any():
                    collector.feed(chunk)
            except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
                raise collector.broken(exc) from exc
    return collector.finish()


async def ask_ws(url: str, prompt: str, *, mode: str = "incremental", voice: str | None = None,
                 speed: float | None = None, fmt: str = DEFAULT_FORMAT, session_id: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, read_timeout: float = DEFAULT_READ_TIMEOUT,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 cancel_after: Callable[[Answer], bool] | None = None) -> Answer:
    """Ask over the agent's binary WebSocket leg ``/ws``: events as JSON text messages, audio as
    binary frames (no Base64). ``cancel_after(answer)`` is asked after every event; when it says
    yes the caller sends ``cancel`` (barge-in) and collects the answer's remaining events.
    An audio event's bytes reach ``on_event`` as ``event["data"]``."""
    ws_url = url.rstrip("/").replace("http://", "ws://", 1).replace("https://", "wss://", 1) + "/ws"
    return await _ask_over_ws(ws_url, _session_header(session_id), None, prompt, mode=mode, voice=voice, speed=speed,
                              fmt=fmt, timeout=timeout, read_timeout=read_timeout, on_event=on_event,
                              cancel_after=cancel_after)


async def ask_ws_runtime(runtime_arn: str, prompt: str, *, mode: str = "incremental", voice: str | None = None,
                         speed: float | None = None, fmt: str = DEFAULT_FORMAT, qualifier: str | None = None,
                         session_id: str | None = None, region: str | None = None, endpoint_url: str | None = None,
                         timeout: float = DEFAULT_TIMEOUT, read_timeout: float = DEFAULT_READ_TIMEOUT,
                         on_event: Callable[[dict[str, Any]], None] | None = None,
                         cancel_after: Callable[[Answer], bool] | None = None) -> Answer:
    """Ask a deployed agent over AgentCore's WebSocket route to its ``/ws`` leg (audio as binary frames,
    no Base64): the upgrade request is SigV4-signed with boto3's credentials by the AgentCore SDK's
    ``generate_ws_connection``. ``endpoint_url`` sends the signed request to another host (a stand-in)."""
    from bedrock_agentcore.runtime import AgentCoreRuntimeClient

    region = region or _arn_region(runtime_arn)
    try:
        signed_url, signed = AgentCoreRuntimeClient(region=region).generate_ws_connection(
            runtime_arn, session_id=session_id or new_session_id(), endpoint_name=qualifier)
    except (RuntimeError, ValueError) as exc:
        raise CallerError(f"cannot sign the WebSocket request: {exc}") from exc
    if endpoint_url:
        target = urllib.parse.urlsplit(endpoint_url)
        signed_url = urllib.parse.urlsplit(signed_url)._replace(scheme=target.scheme, netloc=target.netloc).geturl()
    # The WebSocket client writes the handshake headers itself; the signed ones ride along.
    own = {"host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "user-agent"}
    headers = {name: value for name, value in signed.items() if name.lower() not in own}
    return await _ask_over_ws(signed_url, headers, signed.get("User-Agent"), prompt, mode=mode, voice=voice,
                              speed=speed, fmt=fmt, timeout=timeout, read_timeout=read_timeout, on_event=on_event,
                              cancel_after=cancel_after)


async def _ask_over_ws(ws_url: str, headers: dict[str, str], user_agent: str | None, prompt: str, *, mode: str,
                       voice: str | None, speed: float | None, fmt: str, timeout: float, read_timeout: float,
                       on_event: Callable[[dict[str, Any]], None] | None,
                       cancel_after: Callable[[Answer], bool] | None) -> Answer:
    collector = _Collector(mode, fmt, on_event)
    cancelled = False
    client_options = {"user_agent_header": user_agent} if user_agent else {}
    async with asyncio.timeout(timeout), _refusals_as_caller_errors(ws_url):
        async with websockets.connect(ws_url, additional_headers=headers, max_size=MAX_LINE_BYTES,
                                      open_timeout=10, **client_options) as connection:
            await connection.send(json.dumps({"type": "ask", **_payload(prompt, mode, voice, speed, fmt)}))
            try:
                while not collector.answer.event_types or collector.answer.event_types[-1] not in events.TERMINAL:
                    event = _parse_event(await _receive(connection, str, read_timeout))
                    if event["type"] == events.AUDIO:
                        data = await _receive(connection, bytes, read_timeout)
                        if len(data) != event.get("bytes"):
                            raise CallerError(f"audio header announced {event.get('bytes')} bytes, got {len(data)}")
                        event["data"] = data
                    collector.apply(event)
                    if cancel_after is not None and not cancelled and cancel_after(collector.answer):
                        await connection.send(json.dumps({"type": "cancel"}))
                        collector.answer.cancel_sent_ms = collector.elapsed_ms()
                        cancelled = True
            except websockets.ConnectionClosed as exc:
                raise collector.broken(exc) from exc
    return collector.finish()


@contextlib.asynccontextmanager
async def _refusals_as_caller_errors(ws_url: str) -> AsyncIterator[None]:
    """A refused WebSocket upgrade (HTTP 403 for a bad signature, 404 for a wrong ARN) is a clear error."""
    try:
        yield
    except websockets.InvalidStatus as exc:
        body = exc.response.body.decode("utf-8", "replace")[:300] if exc.response.body else ""
        raise CallerError(f"the WebSocket upgrade was refused: HTTP {exc.response.status_code} {body}".rstrip()) \
            from exc
    except websockets.InvalidHandshake as exc:
        raise CallerError(f"the WebSocket handshake with {ws_url.split('?')[0]} failed: {exc}") from exc


async def _receive(connection: Any, kind: type, read_timeout: float) -> Any:
    try:
        message = await asyncio.wait_for(connection.recv(), read_timeout)
    except TimeoutError as exc:
        raise CallerError(f"nothing from the agent for {read_timeout:.0f} s") from exc
    if not isinstance(message, kind):
        raise CallerError(f"expected a {'binary' if kind is bytes else 'text'} message from the agent")
    return message


def _session_header(session_id: str | None) -> dict[str, str]:
    """How a local agent learns the session (AgentCore's runtime sets this header itself)."""
    return {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session_id} if session_id else {}


def new_session_id() -> str:
    """An AgentCore runtime session id (the service requires at least 33 characters)."""
    return f"voice-agent-{uuid.uuid4().hex}"


def ask_runtime(runtime_arn: str, prompt: str, *, mode: str = "incremental", voice: str | None = None,
                speed: float | None = None, fmt: str = DEFAULT_FORMAT, qualifier: str | None = None,
                session_id: str | None = None, region: str | None = None, endpoint_url: str | None = None,
                timeout: float = DEFAULT_TIMEOUT,
                read_timeout: float = DEFAULT_READ_TIMEOUT,
                on_event: Callable[[dict[str, Any]], None] | None = None) -> Answer:
    """Ask a deployed agent through the AgentCore ``InvokeAgentRuntime`` API (boto3, SigV4) and
    collect its SSE answer exactly as :func:`ask` does. ``region`` defaults to the ARN's region;
    ``endpoint_url`` overrides the service endpoint."""
    region = region or _arn_region(runtime_arn)
    config = botocore.config.Config(connect_timeout=10, read_timeout=read_timeout, retries={"mode": "standard"})
    client = boto3.client("bedrock-agentcore", region_name=region, endpoint_url=endpoint_url, config=config)
    request: dict[str, Any] = {
        "agentRuntimeArn": runtime_arn, "runtimeSessionId": session_id or new_session_id(),
        "payload": json.dumps(_payload(prompt, mode, voice, speed, fmt)).encode(),
        "contentType": "application/json", "accept": "text/event-stream"}
    if qualifier:
        request["qualifier"] = qualifier
    collector = _Collector(mode, fmt, on_event)
    deadline = time.monotonic() + timeout
    try:
        response = client.invoke_agent_runtime(**request)
    except botocore.exceptions.ClientError as exc:
        raise CallerError(f"InvokeAgentRuntime failed: {exc}") from exc
    if not str(response.get("contentType", "")).startswith("text/event-stream"):
        body = response["response"].read(2000).decode("utf-8", "replace")
        raise CallerError(f"the runtime answered {response.get('contentType')}: {body}")
    try:
        for chunk in response["response"].iter_chunks(chunk_size=16 * 1024):
            collector.feed(chunk)
            if time.monotonic() > deadline:
                raise CallerError(f"the answer took longer than {timeout:.0f} s")
    except (botocore.exceptions.BotoCoreError, urllib3.exceptions.HTTPError) as exc:
        raise collector.broken(exc) from exc
    return collector.finish()


def _arn_region(arn: str) -> str:
    parts = arn.split(":")
    if len(parts) < 6 or parts[0] != "arn" or not parts[3]:
        raise CallerError(f"not an AgentCore runtime ARN: {arn!r}")
    return parts[3]


def _parse_event(data: str) -> dict[str, Any]:
    try:
        event = json.loads(data)
    except ValueError as exc:
        raise CallerError(f"an SSE event is not JSON: {data[:200]!r}") from exc
    if not isinstance(event, dict) or "type" not in event:
        # The runtime itself reports a failure inside the stream as {"error": ..., "error_type": ...}.
        raise CallerError(f"unexpected event from the agent: {data[:500]}")
    return event


def _apply(answer: Answer, event: dict[str, Any], elapsed_ms: Callable[[], float]) -> None:
    kind = event["type"]
    answer.event_types.append(kind)
    if kind == events.TEXT:
        if answer.time_to_first_text_ms is None:
            answer.time_to_first_text_ms = elapsed_ms()
        answer.text += event["text"]
    elif kind == events.SENTENCE:
        answer.sentences[event["index"]] = event["text"]
    elif kind == events.AUDIO:
        if answer.time_to_first_audio_ms is None:
            answer.time_to_first_audio_ms = elapsed_ms()
        data = events.decode_audio(event) if "audio" in event else event["data"]
        answer.sample_rate = event["sample_rate"]
        answer.audio += data
        answer.audio_by_sentence[event["index"]] = answer.audio_by_sentence.get(event["index"], 0) + len(data)
    elif kind == events.END:
        answer.server_metrics = event["metrics"]
    elif kind == events.ERROR:
        raise CallerError(f"the agent reported an error: {event.get('code')}: {event.get('message')}")


def write_audio(path: str, answer: Answer) -> None:
    """The answer's audio as a playable file: ``pcm16`` wrapped in WAV, other formats as streamed."""
    data = bytes(answer.audio)
    if answer.format == tts_protocol.FORMAT_PCM16:
        data = tts_protocol.pcm16_to_wav(data, answer.sample_rate)
    with open(path, "wb") as handle:
        handle.write(data)
