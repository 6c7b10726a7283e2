"""Which Strands model answers: Bedrock, the local SmolLM2 model, or a recorded replay."""

from __future__ import annotations

from typing import Any

import boto3
import botocore.config
from strands.models import BedrockModel, Model

from agent.config import AgentSettings
from agent.llm.replay import ReplayModel, load_recording

MODEL_KINDS = ("auto", "bedrock", "local", "replay")


def model_kind(settings: AgentSettings) -> str:
    """The model ``settings`` select; ``auto`` becomes Bedrock when it is configured and boto3 finds
    credentials, else the local model."""
    if settings.model not in MODEL_KINDS:
        raise ValueError(f"VOICE_AGENT_MODEL must be one of {', '.join(MODEL_KINDS)}, not {settings.model!r}")
    if settings.model != "auto":
        return settings.model
    if settings.bedrock_model_id and boto3.Session().get_credentials() is not None:
        return "bedrock"
    return "local"


def build_model(settings: AgentSettings) -> Model:
    """The model ``settings`` select, recording its streams when ``record_dir`` is set."""
    model = _build(settings)
    if settings.record_dir:
        from pathlib import Path

        from agent.llm.recorder import RecordingModel

        kind = model_kind(settings)
        return RecordingModel(model, Path(settings.record_dir),
                              model_id=settings.bedrock_model_id if kind == "bedrock" else kind)
    return model


def _build(settings: AgentSettings) -> Model:
    kind = model_kind(settings)
    if kind == "bedrock":
        if not settings.bedrock_model_id:
            raise ValueError("the Bedrock model needs BEDROCK_MODEL_ID")
        inference: dict[str, Any] = {"max_tokens": settings.bedrock_max_tokens}
        if settings.bedrock_temperature is not None:
            inference["temperature"] = settings.bedrock_temperature
        if settings.bedrock_top_p is not None:
            inference["top_p"] = settings.bedrock_top_p
        client_config = botocore.config.Config(connect_timeout=10, read_timeout=settings.bedrock_read_timeout,
                                               retries={"mode": "adaptive", "max_attempts": 3})
        return BedrockModel(model_id=settings.bedrock_model_id, region_name=settings.aws_region, streaming=True,
                            endpoint_url=settings.bedrock_endpoint_url, boto_client_config=client_config,
                            **inference)
    if kind == "local":
        from agent.llm.local import LocalModel

        return LocalModel(max_tokens=settings.local_max_tokens, seed=settings.local_seed)
    return ReplayModel(load_recording(settings.replay), speed=settings.replay_speed)
