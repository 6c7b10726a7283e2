"""A local agent over HTTP: ``POST /invocations``, the answer as ``text/event-stream``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp

from caller_protocol import INVOCATIONS_PATH, SESSION_HEADER
from voice_agent.caller.answer import OPEN_TIMEOUT, Answer, CallerError, Collector, Options


async def ask_over_http(prompt: str, options: Options, on_event: Callable[[dict[str, Any]], None] | None) -> Answer:
    collector = Collector(options, on_event)
    timeout = aiohttp.ClientTimeout(total=options.timeout, sock_connect=OPEN_TIMEOUT, sock_read=options.read_timeout)
    headers = {"Accept": "text/event-stream", **({SESSION_HEADER: options.session_id} if options.session_id else {})}
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.post(f"{options.url.rstrip('/')}{INVOCATIONS_PATH}",
                                json=options.request(prompt).to_payload(), headers=headers) as response:
            if response.status != 200 or not response.content_type.startswith("text/event-stream"):
                body = (await response.read())[:2000].decode("utf-8", "replace")
                raise CallerError(f"agent answered HTTP {response.status} ({response.content_type}): {body}")
            try:
                async for chunk in response.content.iter_any():
                    collector.feed_sse(chunk)
            except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
                raise collector.broken(exc) from exc
    return collector.finish()
