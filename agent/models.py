"""Which Strands model answers: Bedrock when a model id is configured, else a recorded replay."""

from __future__ import annotations

from strands.models import BedrockModel, Model

from agent.config import AgentSettings
from agent.replay_model import ReplayModel, load_recording


def build_model(settings: AgentSettings) -> Model:
    if settings.bedrock_model_id:
        return BedrockModel(model_id=settings.bedrock_model_id, region_name=settings.aws_region, streaming=True)
    return ReplayModel(load_recording(settings.replay), speed=settings.replay_speed)
