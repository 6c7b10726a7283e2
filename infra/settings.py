"""What a deployment can choose, read from CDK context (``cdk.json``, or ``-c key=value``).

Every key has a default, so ``cdk synth`` works with none given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the teardown reads these names without the CDK installed
    from constructs import Node

# Bedrock cross-region inference profiles carry a geography prefix before the model id.
_PROFILE_PREFIX = re.compile(r"^(us|eu|apac|au|ca|jp|us-gov|global)\.")


IMAGE_ASSETS = ("tts", "agent")
"""The container images, each staged in its own ECR repository named after it."""
KOKORO_VOICES_URL = "https://github.com/thewh1teagle/kokoro-onnx/releases/download/model-files-v1.0/voices-v1.0.bin"
KOKORO_VOICES_SHA256 = "bca610b8308e8d99f32e6fe4197e7ec01679264efed0cac9140fe9c29f1fbf7d"
"""Kokoro v1.0's standard voices file (54 voices, 28,214,398 bytes), as kokoro-onnx publishes it."""
ENGLISH_VOICE = "af_heart"
"""The default voice of a deployment that bakes in a voices file: Kokoro v1.0's American English
voice of the best published grade."""


@dataclass(frozen=True)
class InfraSettings:
    stack_name: str = "VoiceAgent"
    """Also the prefix of the endpoint, runtime and alarm names; teardown finds everything by it."""
    tts_instance_type: str = "ml.g5.xlarge"
    """The TTS endpoint's instance type. ml.g*/ml.p* build the GPU image (ONNX Runtime's CUDA
    provider); any other type (e.g. ml.c7i.xlarge, ml.m5.xlarge) builds the CPU image."""
    tts_min_instances: int = 1
    tts_max_instances: int = 2
    tts_sessions_per_instance: int = 8
    """Autoscaling target: concurrent bidirectional sessions per instance (the container refuses
    more than its ``--max-sessions``, 16 by default)."""
    bedrock_model_id: str = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    """A model id or a cross-region inference profile id; the agent may invoke only this one."""
    voices_url: str = KOKORO_VOICES_URL
    """A Kokoro voices file the TTS image fetches at build time (kept only if its SHA-256 is
    ``voices_sha256``); empty keeps the voices packaged on PyPI (Japanese voices: accented English)."""
    voices_sha256: str = KOKORO_VOICES_SHA256
    voice: str = ""
    """The default voice; empty means ``af_heart`` with the default voices file, else the container's
    default."""
    alarm_email: str = ""
    """Where alarm notifications go; empty creates the topic without a subscription."""
    agent_latency_alarm_ms: int = 30000
    """The agent runtime's p90 invocation latency that raises an alarm. AgentCore measures a streamed
    invocation to its last byte, so this is the whole spoken answer (often 5-20 s), not the time to
    first audio: the alarm is for answers that hang or crawl."""

    @classmethod
    def from_context(cls, node: Node) -> InfraSettings:
        values = {}
        for field in fields(cls):
            raw = node.try_get_context(field.name)
            if raw is None:
                continue
            values[field.name] = int(raw) if field.type == "int" else str(raw)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]{0,39}", self.stack_name):
            raise ValueError(f"stack_name {self.stack_name!r}: letters, digits and '-', at most 40, a letter first")
        if not self.tts_instance_type.startswith("ml."):
            raise ValueError(f"tts_instance_type {self.tts_instance_type!r} is not a SageMaker instance type (ml.*)")
        if not 1 <= self.tts_min_instances <= self.tts_max_instances:
            raise ValueError("need 1 <= tts_min_instances <= tts_max_instances")
        if self.tts_sessions_per_instance < 1:
            raise ValueError("tts_sessions_per_instance must be at least 1")
        if not re.fullmatch(r"[A-Za-z0-9.:_-]{1,128}", self.bedrock_model_id):
            raise ValueError(f"bedrock_model_id {self.bedrock_model_id!r} is not a Bedrock model id")
        if self.voices_url and not re.fullmatch(r"[0-9a-f]{64}", self.voices_sha256):
            raise ValueError(f"voices_sha256 {self.voices_sha256!r} is not a SHA-256 (64 lower-case hex digits)")
        if self.voices_url not in ("", KOKORO_VOICES_URL) and self.voices_sha256 == KOKORO_VOICES_SHA256:
            raise ValueError("another voices_url needs its own voices_sha256: nothing is baked in unverified")
        if not re.fullmatch(r"[A-Za-z0-9_]{0,64}", self.voice):
            raise ValueError(f"voice {self.voice!r} is not a voice name")

    @property
    def default_voice(self) -> str:
        """The voice of a request that names none; empty leaves it to the TTS container."""
        if self.voice:
            return self.voice
        return ENGLISH_VOICE if self.voices_url == KOKORO_VOICES_URL else ""

    @property
    def tts_build_args(self) -> dict[str, str]:
        """The TTS image's build arguments (``Dockerfile.tts``)."""
        arguments = {"VARIANT": "gpu" if self.gpu else "cpu"}
        if self.voices_url:
            arguments.update(VOICES_URL=self.voices_url, VOICES_SHA256=self.voices_sha256)
        if self.default_voice:
            arguments["DEFAULT_VOICE"] = self.default_voice
        return arguments

    @property
    def gpu(self) -> bool:
        return self.tts_instance_type.split(".")[1][:1] in ("g", "p")

    @property
    def endpoint_name(self) -> str:
        return f"{self.stack_name}-tts"

    @property
    def runtime_name(self) -> str:
        # AgentCore runtime names allow letters, digits and underscores only.
        return f"{self.stack_name.replace('-', '_')}_agent"

    @property
    def app_id(self) -> str:
        """Names this app's staging resources: bucket ``cdk-<app_id>-staging-<account>-<region>``,
        ECR repositories ``<app_id>/tts`` and ``<app_id>/agent``."""
        return self.stack_name.lower()

    @property
    def staging_stack_name(self) -> str:
        return f"{self.stack_name}-staging-{self.app_id}"

    def staging_bucket_name(self, account: str, region: str) -> str:
        return f"cdk-{self.app_id}-staging-{account}-{region}"

    @property
    def image_repositories(self) -> tuple[str, ...]:
        return tuple(f"{self.app_id}/{asset}" for asset in IMAGE_ASSETS)

    @property
    def foundation_model_id(self) -> str:
        """The model behind an inference profile id (the id itself when it is not a profile)."""
        return _PROFILE_PREFIX.sub("", self.bedrock_model_id)

    @property
    def is_inference_profile(self) -> bool:
        return self.foundation_model_id != self.bedrock_model_id
