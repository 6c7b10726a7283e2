"""Input limits on the agent's routes, enforced before a body is buffered whole."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse


class PayloadLimit:
    """ASGI middleware: an HTTP request body over ``limit`` bytes is answered 413 without being
    buffered whole (by its Content-Length, or as it streams in when it has none)."""

    def __init__(self, app: Any, limit: int) -> None:
        self._app = app
        self._limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._limit:
            await self._refuse(send)
            return
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the caller went away
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self._limit:
                await self._refuse(send)
                return
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self._app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        await JSONResponse({"error": "Payload too large", "details": f"the body exceeds {self._limit} bytes"},
                           status_code=413)({"type": "http"}, _nothing, send)


async def _nothing() -> dict[str, Any]:
    return {"type": "http.disconnect"}


async def too_deep(request: Any, exc: Exception) -> JSONResponse:
    """A payload nested deeper than the JSON parser recurses is bad input, not a server error."""
    return JSONResponse({"error": "Invalid JSON", "details": "the payload is nested too deeply"}, status_code=400)
