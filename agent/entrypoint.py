"""The AgentCore-hosted agent: ``BedrockAgentCoreApp`` serving ``POST /invocations`` on port 8080.

The payload is ``{"prompt": str, "mode": "incremental"|"batch", "voice"?: str, "speed"?: float}``;
the answer streams back as ``text/event-stream``, one ``agent.events`` dict per ``data:`` line.
Configuration comes from the environment (``agent.config``). Run it with
``voice-agent serve-agent`` or, as AgentCore does in the container, ``python -m agent.entrypoint``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp

from agent import events
from agent.config import AgentSettings
from agent.models import build_model
from agent.pipeline import RequestError, VoicePipeline, VoiceRequest


def create_app(settings: AgentSettings | None = None) -> BedrockAgentCoreApp:
    settings = settings or AgentSettings.from_env()
    build_model(settings)  # fail at start-up, not on the first request, when the model is misconfigured
    pipeline = VoicePipeline(lambda: build_model(settings), settings.tts_url, system_prompt=settings.system_prompt,
                             default_voice=settings.voice)
    app = BedrockAgentCoreApp()

    @app.entrypoint
    async def invoke(payload: Any) -> AsyncIterator[dict[str, Any]]:
        try:
            request = VoiceRequest.from_payload(payload)
        except RequestError as exc:
            yield {**events.error(events.INVALID_REQUEST, str(exc)), "seq": 0}
            return
        async for event in pipeline.answer(request):
            yield event

    return app


if __name__ == "__main__":
    create_app().run()
