"""The AgentCore-hosted agent: ``BedrockAgentCoreApp`` serving port 8080.

- ``POST /invocations``: an answer request (``caller_protocol``), answered as ``text/event-stream``
  (``agent.legs.sse``);
- WebSocket ``/ws``: the binary caller leg (``agent.legs.websocket``);
- ``GET /``: the browser client (``agent.legs.page``); ``GET /ping``: the runtime's health check.

Configuration comes from the environment (``agent.config``). Run it with
``voice-agent serve-agent`` or, as AgentCore does in the container, ``python -m agent.entrypoint``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp, RequestContext
from starlette.websockets import WebSocket

from agent.chunker import SentenceChunker
from agent.config import AgentSettings
from agent.legs.limits import PayloadLimit, too_deep
from agent.legs.page import page
from agent.legs.sse import EventStream, one_event
from agent.legs.websocket import WebSocketCaller
from agent.llm.select import build_model, model_kind
from agent.pipeline import VoicePipeline
from agent.transports import Connect, tts_target
from agent.tts_client import TTSSession
from caller_protocol import MAX_PAYLOAD_BYTES, RequestError, VoiceRequest, events


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
                             pipelining=settings.pipelining,
                             session_factory=functools.partial(TTSSession, chunk_timeout=settings.tts_timeout,
                                                               max_reconnects=settings.tts_reconnects))
    app = BedrockAgentCoreApp()
    app.add_middleware(PayloadLimit, limit=MAX_PAYLOAD_BYTES)
    app.add_route("/", page, methods=["GET"])
    app.add_exception_handler(RecursionError, too_deep)

    @app.entrypoint
    async def invoke(payload: Any, context: RequestContext) -> EventStream:
        try:
            request = VoiceRequest.from_payload(payload)
        except RequestError as exc:
            return EventStream(one_event({**events.error(events.INVALID_REQUEST, str(exc)), "seq": 0}))
        # The session header: turns of one AgentCore session share a conversation.
        return EventStream(pipeline.answer(request, context.session_id))

    @app.websocket
    async def converse(websocket: WebSocket, context: RequestContext) -> None:
        await WebSocketCaller(websocket, pipeline, context.session_id).run()

    return app


def serve(settings: AgentSettings | None = None, host: str | None = None, port: int = 8080) -> None:
    """Run the agent as AgentCore does (port 8080), with the WebSocket message limit."""
    create_app(settings).run(host=host, port=port, ws_max_size=MAX_PAYLOAD_BYTES)


if __name__ == "__main__":
    from agent.processes import exit_with_parent

    exit_with_parent()
    serve()
