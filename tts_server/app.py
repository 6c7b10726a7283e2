"""The TTS container's routes, following the SageMaker serving contract on port 8080.

- ``GET /ping``: 200 once the model is loaded and a warm-up synthesis produced audio, 503 before.
- ``POST /invocations``: one JSON request (the ``synthesize`` message of ``tts_protocol``), a WAV back.
- WebSocket ``/invocations-bidirectional-stream`` (``tts_protocol.BIDI_PATH``): a session speaking
  ``tts_protocol`` (``tts_server.session``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

import tts_protocol as protocol
from tts_server.service import Engine, Synthesis, SynthesisRefused, TTSService, load_kokoro
from tts_server.session import SynthesisSession
from tts_server.settings import ServerSettings

log = logging.getLogger(__name__)


def create_app(settings: ServerSettings | None = None,
               load_engine: Callable[[ServerSettings], Engine] = load_kokoro) -> Starlette:
    """The app; ``load_engine`` makes the engine (Kokoro by default, a stub in the fast tests)."""
    routes = _Routes(TTSService(settings or ServerSettings(), load_engine))
    return Starlette(routes=[Route("/ping", routes.ping, methods=["GET"]),
                             Route("/invocations", routes.invocations, methods=["POST"]),
                             WebSocketRoute(protocol.BIDI_PATH, routes.bidirectional_stream)],
                     lifespan=routes.lifespan)


class _Routes:
    def __init__(self, service: TTSService) -> None:
        self.service = service
        self._request_ids = (f"http-{n}" for n in itertools.count(1))

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        # Loading runs in the background so /ping can answer "loading" meanwhile.
        loader = asyncio.create_task(asyncio.to_thread(self.service.load))
        try:
            yield
        finally:
            loader.cancel()
            self.service.shutdown()

    async def ping(self, request: Request) -> Response:
        service = self.service
        if service.engine is not None:
            return JSONResponse({"status": "Healthy", "provider": service.engine.provider})
        if service.failure is not None:
            return JSONResponse({"status": "Failed", "error": service.failure}, status_code=503)
        return JSONResponse({"status": "Loading"}, status_code=503)

    async def invocations(self, request: Request) -> Response:
        if self.service.engine is None:
            return JSONResponse({"code": "not_ready", "message": "the model is still loading"}, status_code=503)
        body = await _read_limited(request, protocol.MAX_MESSAGE_BYTES)
        if body is None:
            return JSONResponse({"code": protocol.MESSAGE_TOO_LARGE,
                                 "message": f"body exceeds {protocol.MAX_MESSAGE_BYTES} bytes"}, status_code=413)
        try:
            parsed = protocol.parse_client_message(body, default_request_id=next(self._request_ids))
            if not isinstance(parsed, protocol.Synthesize):
                raise protocol.ProtocolError(protocol.BAD_REQUEST, "POST /invocations takes a synthesize request")
            frames = [frame async for frame in self.service.synthesize(parsed, Synthesis(), frame_bytes=1 << 30)
                      if isinstance(frame, bytes)]
        except (protocol.ProtocolError, SynthesisRefused) as exc:
            return JSONResponse({"code": exc.code, "message": exc.message}, status_code=400)
        return Response(protocol.pcm16_to_wav(b"".join(frames)), media_type="audio/wav")

    async def bidirectional_stream(self, websocket: WebSocket) -> None:
        service = self.service
        if service.engine is None:
            await websocket.close(code=1013)  # "try again later": the model is not loaded yet
            return
        if service.sessions >= service.settings.max_sessions:
            await websocket.accept()
            log.warning("refusing a session: %d sessions already open (the limit)", service.sessions)
            await websocket.send_text(protocol.encode_error(
                None, protocol.OVERLOADED, f"the server is serving its limit of {service.settings.max_sessions} "
                                           "sessions; try again later"))
            await websocket.close(code=1013, reason="overloaded")
            return
        service.sessions += 1
        try:
            await SynthesisSession(websocket, service).run()
        finally:
            service.sessions -= 1


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it grows past ``limit`` bytes."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
