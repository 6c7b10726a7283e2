"""The AgentCore-hosted agent: ``BedrockAgentCoreApp`` serving port 8080.

- ``POST /invocations``: an answer request (``caller_protocol``), answered as ``text/event-stream``
  (``agent.legs.sse``);
- WebSocket ``/ws``: the binary caller leg (``agent.legs.websocket``);
- ``GET /``: the browser client (``agent.legs.page``); ``GET /ping``: the runtime's health check.

Configuration comes from the environment (``agent.config``). Run it with
``voice-agent serve-agent`` or, as AgentCore does in the container, ``python -m agent.entrypoint``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
from types import FrameType
from typing import Any

import uvicorn
from bedrock_agentcore.runtime import BedrockAgentCoreApp, RequestContext
from starlette.websockets import WebSocket

from agent.chunker import SentenceChunker
from agent.config import AgentSettings
from agent.legs.diagnostics import diagnostics
from agent.legs.limits import PayloadLimit, too_deep
from agent.legs.page import page
from agent.legs.sse import EventStream, one_event
from agent.legs.websocket import WebSocketCaller
from agent.llm.select import build_model, model_kind
from agent.pipeline import VoicePipeline
from agent.transports import Connect, tts_target
from agent.tts_client import TTSSession
from caller_protocol import MAX_PAYLOAD_BYTES, RequestError, VoiceRequest, checked_session_id, events

log = logging.getLogger(__name__)


def create_app(settings: AgentSettings | None = None, tts: str | Connect | None = None) -> BedrockAgentCoreApp:
    """The app. ``tts`` replaces the TTS target the settings name (a test's in-memory TTS)."""
    settings = settings or AgentSettings.from_env()
    # Resolve "auto" once: looking for credentials can take seconds where none exist.
    settings = dataclasses.replace(settings, model=model_kind(settings))
    model = build_model(settings)  # fail at start-up, not on the first request, when misconfigured
    if hasattr(model, "warm_up"):
        model.warm_up()
    pipeline = VoicePipeline(lambda: build_model(settings), tts or tts_target(settings),
                             system_prompt=settings.system_prompt, default_voice=settings.voice,
                             chunker_factory=lambda: SentenceChunker(quick_first_chunk=settings.quick_first_chunk),
                             pipelining=settings.pipelining, shutdown_grace=settings.shutdown_grace,
                             max_conversations=settings.max_conversations,
                             session_factory=functools.partial(TTSSession, chunk_timeout=settings.tts_timeout,
                                                               max_reconnects=settings.tts_reconnects))
    app = BedrockAgentCoreApp()
    app.state.pipeline = pipeline
    app.add_middleware(PayloadLimit, limit=MAX_PAYLOAD_BYTES)
    app.add_route("/", page, methods=["GET"])
    if settings.diagnostics:
        app.add_route("/diagnostics", diagnostics, methods=["GET"])
    app.add_exception_handler(RecursionError, too_deep)

    @app.entrypoint
    async def invoke(payload: Any, context: RequestContext) -> EventStream:
        try:
            request = VoiceRequest.from_payload(payload)
            # The session header: turns of one AgentCore session share a conversation.
            session_id = checked_session_id(context.session_id)
        except RequestError as exc:
            return EventStream(one_event({**events.error(events.INVALID_REQUEST, str(exc)), "seq": 0}))
        return EventStream(pipeline.answer(request, session_id))

    @app.websocket
    async def converse(websocket: WebSocket, context: RequestContext) -> None:
        await WebSocketCaller(websocket, pipeline, context.session_id).run()

    return app


def serve(settings: AgentSettings | None = None, host: str | None = None, port: int = 8080) -> None:
    """Run the agent as AgentCore does (port 8080), with the WebSocket message limit. On SIGTERM or
    SIGINT it drains (:class:`DrainingServer`); a second signal stops it at once."""
    # The runtime logs through its own handler; without this every line of it would appear twice.
    logging.getLogger("bedrock_agentcore").propagate = False
    app = create_app(settings)
    if host is None:  # as BedrockAgentCoreApp.run chooses: every interface in a container, else loopback
        host = "0.0.0.0" if os.path.exists("/.dockerenv") or os.environ.get("DOCKER_CONTAINER") else "127.0.0.1"
    config = uvicorn.Config(app, host=host, port=port, ws_max_size=MAX_PAYLOAD_BYTES, access_log=False,
                            log_level="warning")
    DrainingServer(config, app.state.pipeline).run()


class DrainingServer(uvicorn.Server):
    """Uvicorn, told to stop, first lets the pipeline drain (``VoicePipeline.shut_down``): answers in
    progress finish or end with a ``shutting_down`` error event, while the connections that carry
    them are still open (uvicorn's own shutdown would close a WebSocket at once, code 1012, and
    keep an SSE answer going until it is killed). Then it shuts down as usual."""

    def __init__(self, config: uvicorn.Config, pipeline: VoicePipeline) -> None:
        super().__init__(config)
        self.pipeline = pipeline
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining: asyncio.Task[None] | None = None

    async def serve(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._loop is None or self._draining is not None or self.should_exit:
            super().handle_exit(sig, frame)  # not serving yet, or a second signal: stop now
            return
        self._captured_signals.append(sig)  # re-raised after the shutdown, as uvicorn does
        self._loop.call_soon_threadsafe(self._start_draining)

    def _start_draining(self) -> None:
        if self._draining is None:
            self._draining = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        log.info("stopping: answers in progress have %.0f s to finish", self.pipeline.shutdown_grace)
        ended = await self.pipeline.shut_down()
        if ended:
            log.warning("stopping: %d answer(s) ended early with a shutting_down error event", ended)
        self.should_exit = True


if __name__ == "__main__":
    from agent.processes import exit_with_parent
    from settings_table import configure_logging

    configure_logging()
    exit_with_parent()
    serve()
