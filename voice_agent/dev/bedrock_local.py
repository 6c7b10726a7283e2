"""A local stand-in for Bedrock's ``ConverseStream``, so the real ``BedrockModel`` (boto3's
``bedrock-runtime`` client, SigV4, the event-stream parser) runs offline.

It answers ``POST /model/{modelId}/converse-stream`` the way the service does: HTTP 200 with an
``application/vnd.amazon.eventstream`` body, one event message per stream event
(``:message-type`` ``event``, ``:event-type`` the member name, a JSON payload), played from a
recording at its recorded pace. Each request's ``inferenceConfig`` and message count are logged,
so tests can see which settings reached the wire. Signatures are not checked (there is no secret
to check them with); an unknown route gets the service's JSON error with ``x-amzn-errortype``.
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


def create_app(recording: Recording, speed: float = 1.0) -> web.Application:
    async def converse_stream(request: web.Request) -> web.StreamResponse:
        match = ROUTE.match(request.path)
        if request.method != "POST" or match is None:
            return web.json_response({"message": f"no route for {request.method} {request.path}"}, status=404,
                                     headers={"x-amzn-errortype": "UnknownOperationException"})
        try:
            body = json.loads(await request.read())
        except ValueError:
            return web.json_response({"message": "the body is not JSON"}, status=400,
                                     headers={"x-amzn-errortype": "ValidationException"})
        log.info("ConverseStream model=%s messages=%d inferenceConfig=%s", match["model"],
                 len(body.get("messages", [])), json.dumps(body.get("inferenceConfig", {}), sort_keys=True))
        response = web.StreamResponse(headers={"Content-Type": "application/vnd.amazon.eventstream"})
        await response.prepare(request)
        started = time.perf_counter()
        for at, event in recording.events:
            delay = at / speed - (time.perf_counter() - started)
            if delay > 0:
                await asyncio.sleep(delay)
            await response.write(encode_event(event))
        await response.write_eof()
        return response

    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app.router.add_route("*", "/{tail:.*}", converse_stream)
    return app


def serve(recording: Recording, host: str, port: int, speed: float = 1.0) -> None:
    web.run_app(create_app(recording, speed), host=host, port=port, print=None, access_log=None)
