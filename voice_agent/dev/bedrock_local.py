"""A local stand-in for Bedrock's ``ConverseStream``, so the real ``BedrockModel`` (boto3's
``bedrock-runtime`` client, SigV4, the event-stream parser) runs offline.

It answers ``POST /model/{modelId}/converse-stream`` the way the service does: HTTP 200 with an
``application/vnd.amazon.eventstream`` body, one event message per stream event
(``:message-type`` ``event``, ``:event-type`` the member name, a JSON payload), played from a
recording at its recorded pace. Each request's ``inferenceConfig`` and message count are logged,
so tests can see which settings reached the wire. Signatures are not checked (there is no secret
to check them with); an unknown route gets the service's JSON error with ``x-amzn-errortype``.

Faults, as the service shows them: ``throttle_first`` answers the first requests with HTTP 429
``ThrottlingException`` before any stream; ``fail_after`` ends each stream after that many events
with a ``modelStreamErrorException`` exception message (an error in the middle of an answer).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from typing import Any

from aiohttp import web
from smithy_aws_event_stream.events import EventMessage

from agent.llm.replay import Recording

log = logging.getLogger(__name__)

ROUTE = re.compile(r"^/model/(?P<model>[^/]+)/converse-stream$")
MAX_REQUEST_BYTES = 1024 * 1024


def encode_event(event: dict[str, Any]) -> bytes:
    """One ConverseStream event (``{"contentBlockDelta": {...}}``) as an event-stream message."""
    (name, body), = event.items()
    return EventMessage(headers={":message-type": "event", ":event-type": name,
                                 ":content-type": "application/json"},
                        payload=json.dumps(body).encode()).encode()


def encode_exception(exception_type: str, message: str) -> bytes:
    """A stream's exception message (``:message-type`` ``exception``), as the service ends a broken stream."""
    return EventMessage(headers={":message-type": "exception", ":exception-type": exception_type,
                                 ":content-type": "application/json"},
                        payload=json.dumps({"message": message}).encode()).encode()


def create_app(recording: Recording, speed: float = 1.0, *, throttle_first: int = 0,
               fail_after: int | None = None) -> web.Application:
    requests = 0

    async def converse_stream(request: web.Request) -> web.StreamResponse:
        nonlocal requests
        match = ROUTE.match(request.path)
        if request.method != "POST" or match is None:
            return web.json_response({"message": f"no route for {request.method} {request.path}"}, status=404,
                                     headers={"x-amzn-errortype": "UnknownOperationException"})
        try:
            body = json.loads(await request.read())
        except ValueError:
            return web.json_response({"message": "the body is not JSON"}, status=400,
                                     headers={"x-amzn-errortype": "ValidationException"})
        requests += 1
        messages = body.get("messages", [])
        if requests <= throttle_first:
            log.info("ConverseStream request %d throttled", requests)
            return web.json_response({"message": "Too many requests, please wait before trying again."},
                                     status=429, headers={"x-amzn-errortype": "ThrottlingException"})
        log.info("ConverseStream model=%s messages=%d inferenceConfig=%s said=%s", match["model"], len(messages),
                 json.dumps(body.get("inferenceConfig", {}), sort_keys=True), json.dumps(_last_answer(messages)))
        response = web.StreamResponse(headers={"Content-Type": "application/vnd.amazon.eventstream"})
        await response.prepare(request)
        started = time.perf_counter()
        for index, (at, event) in enumerate(recording.events):
            delay = at / speed - (time.perf_counter() - started)
            if delay > 0:
                await asyncio.sleep(delay)
            if index == fail_after:
                log.info("ConverseStream ended with an exception after %d events", index)
                await response.write(encode_exception("modelStreamErrorException", "The model stream failed."))
                break
            await response.write(encode_event(event))
        await response.write_eof()
        return response

    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app.router.add_route("*", "/{tail:.*}", converse_stream)
    return app


def _last_answer(messages: list[dict[str, Any]]) -> str:
    """The text of the conversation's latest assistant message (what the agent kept of its answer)."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            return "".join(block.get("text", "") for block in message.get("content", []))
    return ""


def serve(recording: Recording, host: str, port: int, speed: float = 1.0, *, throttle_first: int = 0,
          fail_after: int | None = None) -> None:
    web.run_app(create_app(recording, speed, throttle_first=throttle_first, fail_after=fail_after), host=host,
                port=port, print=None, access_log=None)
