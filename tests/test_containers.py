"""The container contracts, checked without a Docker engine: the Dockerfiles are parsed, and their
entry commands resolve to the commands the other tests run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from voice_agent.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def instructions(name: str) -> list[tuple[str, str]]:
    text = (ROOT / name).read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def values(name: str, keyword: str) -> list[str]:
    return [argument for instruction, argument in instructions(name) if instruction == keyword]


def test_the_tts_image_follows_the_sagemaker_bidirectional_streaming_contract():
    assert "com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true" in values("Dockerfile.tts", "LABEL")
    assert values("Dockerfile.tts", "EXPOSE") == ["8080"]
    assert values("Dockerfile.tts", "USER")[-1] not in ("root", "0")
    assert any("prepare-model" in run for run in values("Dockerfile.tts", "RUN")), "model assembled at build time"
    entry = json.loads(values("Dockerfile.tts", "ENTRYPOINT")[-1]) + json.loads(values("Dockerfile.tts", "CMD")[-1])
    assert entry == ["voice-agent", "serve"]
    # `docker run IMAGE serve` replaces CMD with "serve": the TTS server on every interface, port 8080.
    args = build_parser().parse_args(entry[1:])
    assert (args.command, args.host, args.port) == ("serve", "0.0.0.0", 8080)
    assert args.handler is build_parser().parse_args(["serve-tts"]).handler


def test_the_agent_image_is_arm64_python_312_non_root_on_8080():
    base = values("Dockerfile.agent", "FROM")[0]
    assert re.fullmatch(r"--platform=linux/arm64 python:3\.12-slim", base)
    assert values("Dockerfile.agent", "EXPOSE") == ["8080"]
    assert values("Dockerfile.agent", "USER")[-1] not in ("root", "0")
    assert json.loads(values("Dockerfile.agent", "CMD")[-1]) == ["python", "-m", "agent.entrypoint"]
    environment = " ".join(values("Dockerfile.agent", "ENV"))
    assert "DOCKER_CONTAINER=1" in environment  # BedrockAgentCoreApp then binds 0.0.0.0
    assert "VOICE_AGENT_MODEL=bedrock" in environment


def test_both_images_install_the_hash_pinned_runtime_lock():
    for name in ("Dockerfile.tts", "Dockerfile.agent"):
        assert any("--require-hashes -r requirements.lock" in run for run in values(name, "RUN")), name
