"""The binary leg ``/ws``: events as JSON text messages, audio as binary frames (no Base64); to a
local agent directly, or to a deployed one over AgentCore's WebSocket route, the upgrade request
SigV4-signed with boto3's credentials by the AgentCore SDK's ``generate_ws_connection``."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import AsyncIterator, Callable
from typing import Any

import websockets

from caller_protocol import MAX_LINE_BYTES, SESSION_HEADER, WS_PATH, encode_ask, encode_cancel
from voice_agent.caller.answer import OPEN_TIMEOUT, Answer, CallerError, Collector, Options, new_session_id
from voice_agent.caller.runtime import arn_region

INTERRUPT_TIMEOUT = 2.0
"""Seconds to tell the agent the listener stopped, before giving up on it."""


async def ask_over_ws(prompt: str, options: Options, on_event: Callable[[dict[str, Any]], None] | None,
                      cancel_after: Callable[[Answer], bool] | None,
                      played: Callable[[], float] | None = None) -> Answer:
    if options.runtime_arn:
        url, headers, user_agent = _signed(options)
    else:
        base = options.url.rstrip("/").replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        url, user_agent = base + WS_PATH, None
        headers = {SESSION_HEADER: options.session_id} if options.session_id else {}
    collector = Collector(options, on_event)
    client_options = {"user_agent_header": user_agent} if user_agent else {}
    async with asyncio.timeout(options.timeout), _refusals_as_caller_errors(url):
        async with websockets.connect(url, additional_headers=headers, max_size=MAX_LINE_BYTES,
                                      open_timeout=OPEN_TIMEOUT, **client_options) as connection:
            await connection.send(encode_ask(options.request(prompt)))
            cancelled = False
            try:
                while not collector.reader.finished:
                    collector.feed_ws(await _receive(connection, options.read_timeout))
                    if cancel_after is not None and not cancelled and cancel_after(collector.answer):
                        await connection.send(encode_cancel())
                        collector.answer.cancel_sent_ms = collector.elapsed_ms()
                        cancelled = True
            except websockets.ConnectionClosed as exc:
                raise collector.broken(exc) from exc
            except asyncio.CancelledError:  # the listener interrupted (Ctrl-C): say how far playback got
                if played is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(connection.send(encode_cancel(played())), INTERRUPT_TIMEOUT)
                raise
    return collector.finish()


async def stopped_playing(options: Options, played_ms: float) -> None:
    """The listener stopped an answer that had already ended at ``played_ms`` of its audio: tell
    the agent, on a connection of the same session, so it keeps only what was heard."""
    url, headers, _ = _signed(options) if options.runtime_arn else (
        options.url.rstrip("/").replace("http://", "ws://", 1).replace("https://", "wss://", 1) + WS_PATH,
        {SESSION_HEADER: options.session_id} if options.session_id else {}, None)
    async with asyncio.timeout(INTERRUPT_TIMEOUT * 2), _refusals_as_caller_errors(url):
        async with websockets.connect(url, additional_headers=headers, open_timeout=OPEN_TIMEOUT) as connection:
            await connection.send(encode_cancel(played_ms))


def _signed(options: Options) -> tuple[str, dict[str, str], str | None]:
    """The signed URL, the headers to send with the upgrade, and the user agent they were signed with."""
    from bedrock_agentcore.runtime import AgentCoreRuntimeClient

    assert options.runtime_arn is not None
    region = options.region or arn_region(options.runtime_arn)
    try:
        signed_url, signed = AgentCoreRuntimeClient(region=region).generate_ws_connection(
            options.runtime_arn, session_id=options.session_id or new_session_id(), endpoint_name=options.qualifier)
    except (RuntimeError, ValueError) as exc:
        raise CallerError(f"cannot sign the WebSocket request: {exc}") from exc
    if options.endpoint_url:
        target = urllib.parse.urlsplit(options.endpoint_url)
        signed_url = urllib.parse.urlsplit(signed_url)._replace(scheme=target.scheme, netloc=target.netloc).geturl()
    # The WebSocket client writes the handshake headers itself; the signed ones ride along.
    own = {"host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "user-agent"}
    return signed_url, {name: value for name, value in signed.items() if name.lower() not in own}, \
        signed.get("User-Agent")


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


async def _receive(connection: Any, read_timeout: float) -> str | bytes:
    try:
        return await asyncio.wait_for(connection.recv(), read_timeout)
    except TimeoutError as exc:
        raise CallerError(f"nothing from the agent for {read_timeout:.0f} s") from exc
