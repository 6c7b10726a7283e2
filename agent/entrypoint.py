"""The AgentCore-hosted agent: ``BedrockAgentCoreApp`` serving ``POST /invocations`` on port 8080.

The payload is ``{"prompt": str, "mode": "incremental"|"batch", "voice"?: str, "speed"?: float}``;
the answer streams back as ``text/event-stream``, one ``agent.events`` dict per ``data:`` line.
Configuration comes from the environment (``agent.config``). Run it with
``voice-agent serve-agent`` or, as AgentCore does in the container, ``python -m agent.entrypoint``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp, RequestContext

from agent import events
from agent.chunker import SentenceChunker
from agent.config import AgentSettings
from agent.models import build_model, model_kind
from agent.pipeline import RequestError, VoicePipeline, VoiceRequest
from agent.tts_client import Connect


def tts_target(settings: AgentSettings) -> str | Connect:
    """The SageMaker endpoint when one is configured, else the container's WebSocket URL."""
    if not settings.sagemaker_endpoint:
        return settings.tts_url
    from agent.sagemaker_transport import SageMakerConnector

    region = settings.sagemaker_region or settings.aws_region
    if not region:
        raise ValueError("SAGEMAKER_ENDPOINT_NAME is set but no region is: set SAGEMAKER_REGION or AWS_REGION")
    return SageMakerConnector(settings.sagemaker_endpoint, region, endpoint_uri=settings.sagemaker_endpoint_url,
                              ca_file=Path(settings.sagemaker_ca_bundle) if settings.sagemaker_ca_bundle else None)


def create_app(settings: AgentSettings | None = None) -> BedrockAgentCoreApp:
    settings = settings or AgentSettings.from_env()
    # Resolve "auto" once: looking for credentials can take seconds where none exist.
    settings = dataclasses.replace(settings, model=model_kind(settings))
    model = build_model(settings)  # fail at start-up, not on the first request, when misconfigured
    if hasattr(model, "warm_up"):
        model.warm_up()
    pipeline = VoicePipeline(lambda: build_model(settings), tts_target(settings),
                             system_prompt=settings.system_prompt, default_voice=settings.voice,
                             chunker_factory=lambda: SentenceChunker(quick_first_chunk=settings.quick_first_chunk),
                             pipelining=settings.pipelining)
    app = BedrockAgentCoreApp()

    @app.entrypoint
    async def invoke(payload: Any, context: RequestContext) -> AsyncIterator[dict[str, Any]]:
        try:
            request = VoiceRequest.from_payload(payload)
        except RequestError as exc:
            yield {**events.error(events.INVALID_REQUEST, str(exc)), "seq": 0}
            return
        # X-Amzn-Bedrock-AgentCore-Runtime-Session-Id: turns of one session share a conversation.
        async for event in pipeline.answer(request, context.session_id):
            yield events.to_json(event)

    return app


if __name__ == "__main__":
    create_app().run()
