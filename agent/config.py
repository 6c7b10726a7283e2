"""Agent configuration from environment variables, each with a documented default."""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_TTS_URL = "ws://127.0.0.1:8081/invocations-bidirectional-stream"
DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful voice assistant. Your answers are spoken aloud, so answer in plain, "
    "conversational sentences without markdown, lists or code."
)


@dataclass(frozen=True)
class AgentSettings:
    tts_url: str = DEFAULT_TTS_URL
    """VOICE_AGENT_TTS_URL: the TTS container's bidirectional-stream WebSocket, used when no
    SageMaker endpoint is configured."""
    sagemaker_endpoint: str | None = None
    """SAGEMAKER_ENDPOINT_NAME: when set, the TTS session goes through this SageMaker endpoint."""
    sagemaker_region: str | None = None
    """SAGEMAKER_REGION: the endpoint's region; default AWS_REGION."""
    sagemaker_endpoint_url: str | None = None
    """SAGEMAKER_ENDPOINT_URL: overrides https://runtime.sagemaker.REGION.amazonaws.com:8443."""
    sagemaker_ca_bundle: str | None = None
    """SAGEMAKER_CA_BUNDLE: a private CA to trust for that URL (the local stand-in's)."""
    model: str = "auto"
    """VOICE_AGENT_MODEL: which model answers: ``bedrock``, ``local`` (SmolLM2-135M in process),
    ``replay`` (a recording), or ``auto``: Bedrock when BEDROCK_MODEL_ID is set and boto3 finds
    credentials, the local model otherwise."""
    bedrock_model_id: str | None = None
    """BEDROCK_MODEL_ID: the Bedrock model (or inference profile) id."""
    bedrock_max_tokens: int = 1024
    """BEDROCK_MAX_TOKENS: the answer length limit; a spoken answer is short, and an answer cut here
    is still spoken up to where it stopped (``truncated`` in the end event)."""
    bedrock_temperature: float | None = None
    """BEDROCK_TEMPERATURE: sampling temperature, 0 to 1; unset: the model's default."""
    bedrock_top_p: float | None = None
    """BEDROCK_TOP_P: nucleus sampling, 0 to 1; unset: the model's default."""
    bedrock_endpoint_url: str | None = None
    """BEDROCK_ENDPOINT_URL: overrides the bedrock-runtime endpoint (a VPC endpoint, or the local
    stand-in ``voice-agent bedrock-local``)."""
    bedrock_read_timeout: float = 60.0
    """BEDROCK_READ_TIMEOUT: seconds without a byte from Bedrock's stream before the answer fails."""
    aws_region: str | None = None
    """AWS_REGION: Bedrock's region; None lets boto3 resolve it."""
    replay: str = "long"
    """VOICE_AGENT_REPLAY: with the replay model, a packaged recording (short, long, markdown,
    unfinished, clauses) or a path."""
    local_max_tokens: int = 160
    """VOICE_AGENT_LOCAL_MAX_TOKENS: the local model's answer length limit."""
    local_seed: int = 7
    """VOICE_AGENT_LOCAL_SEED: the local model's sampling seed (same seed, same answer)."""
    replay_speed: float = 1.0
    """VOICE_AGENT_REPLAY_SPEED: 2.0 replays a recording twice as fast as it was recorded."""
    voice: str | None = None
    """VOICE_AGENT_VOICE: the default voice; None uses the TTS server's default."""
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    """VOICE_AGENT_SYSTEM_PROMPT."""
    quick_first_chunk: bool = True
    """VOICE_AGENT_QUICK_FIRST_CHUNK (1/0): let the first chunk end at a clause mark."""
    tts_timeout: float = 60.0
    """VOICE_AGENT_TTS_TIMEOUT: seconds to wait for a sentence's next audio before the answer fails
    with ``tts_failed`` (a stalled TTS container never leaves the caller hanging)."""
    tts_reconnects: int = 3
    """VOICE_AGENT_TTS_RECONNECTS: times a lost TTS session is reopened (waits 0.2 s, doubling) and its
    unfinished sentences resent, before the answer fails with ``tts_failed``. Raise it to ride out a
    container restart (about 5 s here: 6 attempts wait up to 12.6 s)."""
    record_dir: str | None = None
    """VOICE_AGENT_RECORD_DIR: write every whole model stream there in the replay format (one JSONL
    file per answer), to replay a live answer later at its own pace; unset: nothing is recorded."""
    pipelining: bool = True
    """VOICE_AGENT_PIPELINING (1/0): send each sentence without waiting for the previous one's audio."""

    @classmethod
    def from_env(cls) -> AgentSettings:
        env = os.environ
        return cls(
            tts_url=env.get("VOICE_AGENT_TTS_URL", DEFAULT_TTS_URL),
            sagemaker_endpoint=env.get("SAGEMAKER_ENDPOINT_NAME") or None,
            sagemaker_region=env.get("SAGEMAKER_REGION") or None,
            sagemaker_endpoint_url=env.get("SAGEMAKER_ENDPOINT_URL") or None,
            sagemaker_ca_bundle=env.get("SAGEMAKER_CA_BUNDLE") or None,
            model=env.get("VOICE_AGENT_MODEL", "auto"),
            bedrock_model_id=env.get("BEDROCK_MODEL_ID") or None,
            bedrock_max_tokens=int(env.get("BEDROCK_MAX_TOKENS", "1024")),
            bedrock_temperature=_optional_float(env.get("BEDROCK_TEMPERATURE")),
            bedrock_top_p=_optional_float(env.get("BEDROCK_TOP_P")),
            bedrock_endpoint_url=env.get("BEDROCK_ENDPOINT_URL") or None,
            bedrock_read_timeout=float(env.get("BEDROCK_READ_TIMEOUT", "60")),
            aws_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            replay=env.get("VOICE_AGENT_REPLAY", "long"),
            replay_speed=float(env.get("VOICE_AGENT_REPLAY_SPEED", "1.0")),
            local_max_tokens=int(env.get("VOICE_AGENT_LOCAL_MAX_TOKENS", "160")),
            local_seed=int(env.get("VOICE_AGENT_LOCAL_SEED", "7")),
            voice=env.get("VOICE_AGENT_VOICE") or None,
            system_prompt=env.get("VOICE_AGENT_SYSTEM_PROMPT", DEFAULT_SYSTEM_PROMPT),
            quick_first_chunk=env.get("VOICE_AGENT_QUICK_FIRST_CHUNK", "1") != "0",
            pipelining=env.get("VOICE_AGENT_PIPELINING", "1") != "0",
            record_dir=env.get("VOICE_AGENT_RECORD_DIR") or None,
            tts_timeout=float(env.get("VOICE_AGENT_TTS_TIMEOUT", "60")),
            tts_reconnects=int(env.get("VOICE_AGENT_TTS_RECONNECTS", "3")),
        )


def _optional_float(value: str | None) -> float | None:
    return float(value) if value else None
