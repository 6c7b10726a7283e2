"""The container contracts, checked without a Docker engine: the Dockerfiles are parsed, and their
entry commands resolve to the commands the other tests run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from voice_agent.cli import build_parser
from voice_agent.commands.serve import tts_settings

ROOT = Path(__file__).resolve().parents[2]


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


def test_each_image_installs_its_own_hash_pinned_lock():
    for name, lock in (("Dockerfile.tts", "requirements-tts.lock"), ("Dockerfile.agent", "requirements-agent.lock")):
        assert any(f"--require-hashes -r {lock}" in run for run in values(name, "RUN")), name
        assert any(lock in copy for copy in values(name, "COPY")), name


def build_args(name: str) -> dict[str, str]:
    return dict(argument.split("=", 1) if "=" in argument else (argument, "") for argument in values(name, "ARG"))


def stages(name: str) -> dict[str, list[tuple[str, str]]]:
    """Each build stage's instructions, by stage name (the last, unnamed one as "final")."""
    found: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for instruction, argument in instructions(name):
        if instruction == "FROM":
            words = argument.split()
            current = found.setdefault(words[2] if len(words) == 3 and words[1].upper() == "AS" else "final", [])
        current.append((instruction, argument))
    return found


def test_the_tts_image_variant_is_a_build_argument_and_the_gpu_stage_serves_a_verified_model():
    assert build_args("Dockerfile.tts")["VARIANT"] == "cpu"
    built = stages("Dockerfile.tts")
    assert built["final"][0] == ("FROM", "runtime-${VARIANT}")
    assert set(built) == {"base", "runtime-cpu", "runtime-gpu", "final"}
    gpu = built["runtime-gpu"]
    run = " ".join(argument for instruction, argument in gpu if instruction == "RUN")
    assert "pip uninstall --yes onnxruntime" in run
    assert "--require-hashes -r requirements-gpu.lock" in run
    assert 'prepare-model --model-url "$MODEL_URL" --model-sha256 "$MODEL_SHA256"' in run
    gpu_args = dict(argument.split("=", 1) for instruction, argument in gpu if instruction == "ARG")
    assert re.fullmatch(r"[0-9a-f]{64}", gpu_args["MODEL_SHA256"])
    # The engine serves what prepare-model saved: the URL's file name in the image's cache directory.
    cache = re.search(r"VOICE_AGENT_CACHE=(\S+)", " ".join(values("Dockerfile.tts", "ENV"))).group(1)
    model_file = gpu_args["MODEL_URL"].rsplit("/", 1)[1]
    assert ("ENV", f"VOICE_AGENT_MODEL_FILE={cache}/{model_file}") in gpu
    assert ("ENV", "VOICE_AGENT_VOICES=${VOICES_URL:+/opt/model/voices.bin}") in built["final"]


def test_the_gpu_lock_swaps_onnxruntime_for_the_cuda_12_build_and_agrees_with_the_tts_lock():
    def pins(name: str) -> dict[str, str]:
        return dict(re.findall(r"^([a-z0-9_.-]+)==(\S+)", (ROOT / name).read_text(), re.MULTILINE))

    gpu, runtime = pins("requirements-gpu.lock"), pins("requirements-tts.lock")
    assert "onnxruntime-gpu" in gpu and "onnxruntime" not in gpu
    assert any(name.startswith("nvidia-cudnn-cu12") for name in gpu)
    assert all(runtime[name] == version for name, version in gpu.items() if name in runtime)
    assert "--hash=sha256:" in (ROOT / "requirements-gpu.lock").read_text()


def test_the_container_reads_its_server_options_from_the_environment(monkeypatch):
    monkeypatch.setenv("VOICE_AGENT_DEFAULT_VOICE", "af_test")
    monkeypatch.setenv("VOICE_AGENT_MAX_SESSIONS", "4")
    monkeypatch.setenv("VOICE_AGENT_THREADS", "2")
    monkeypatch.setenv("VOICE_AGENT_VOICES", "/opt/model/voices.bin")
    settings = tts_settings(build_parser().parse_args(["serve"]))
    assert (settings.default_voice, settings.max_sessions, settings.threads, str(settings.voices_path)) == (
        "af_test", 4, 2, "/opt/model/voices.bin")
    monkeypatch.setenv("VOICE_AGENT_VOICES", "")  # the CPU image's empty ENV: the packaged voices
    assert tts_settings(build_parser().parse_args(["serve"])).voices_path is None
    options = tts_settings(build_parser().parse_args(["serve", "--max-sessions", "9"]))
    assert options.max_sessions == 9, "an option overrides the environment"
