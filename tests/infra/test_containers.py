"""The container contracts, read from the Dockerfiles without a Docker engine (the container tier,
tests/containers, builds and runs them): their entry commands resolve to the commands the other
tests run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tts_server.cli import build_parser, tts_settings

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
    assert any("python -m tts_server prepare-model" in run for run in values("Dockerfile.tts", "RUN")), \
        "model assembled at build time"
    entry = json.loads(values("Dockerfile.tts", "ENTRYPOINT")[-1]) + json.loads(values("Dockerfile.tts", "CMD")[-1])
    assert entry == ["python", "-m", "tts_server", "serve"]
    # `docker run IMAGE serve` replaces CMD with "serve": the TTS server on every interface, port 8080.
    args = build_parser().parse_args(entry[3:])
    assert (args.command, args.host, args.port) == ("serve", "0.0.0.0", 8080)


def test_the_agent_image_is_arm64_unless_built_for_another_platform_python_312_non_root_on_8080():
    assert values("Dockerfile.agent", "FROM") == ["--platform=${PLATFORM} ${BASE_IMAGE}"]
    assert build_args("Dockerfile.agent") == {"BASE_IMAGE": "python:3.12-slim", "PLATFORM": "linux/arm64"}
    assert values("Dockerfile.agent", "EXPOSE") == ["8080"]
    assert values("Dockerfile.agent", "USER")[-1] not in ("root", "0")
    assert json.loads(values("Dockerfile.agent", "CMD")[-1]) == ["python", "-m", "agent.entrypoint"]
    environment = " ".join(values("Dockerfile.agent", "ENV"))
    assert "DOCKER_CONTAINER=1" in environment  # BedrockAgentCoreApp then binds 0.0.0.0
    assert "VOICE_AGENT_MODEL=bedrock" in environment


def test_each_image_installs_its_own_hash_pinned_lock_and_copies_only_its_own_leg():
    for name, lock, own, other in (("Dockerfile.tts", "requirements-tts.lock", "tts_server", "agent"),
                                   ("Dockerfile.agent", "requirements-agent.lock", "agent", "tts_server")):
        assert any(f"--require-hashes -r {lock}" in run for run in values(name, "RUN")), name
        copied = " ".join(values(name, "COPY"))
        assert lock in copied and f"{own} ./{own}" in copied and "tts_protocol ./tts_protocol" in copied, name
        assert f"{other} ./{other}" not in copied and "voice_agent" not in copied, name


def build_args(name: str) -> dict[str, str]:
    return dict(argument.split("=", 1) if "=" in argument else (argument, "") for argument in values(name, "ARG"))


def test_both_dockerfiles_build_with_the_classic_builder():
    """Debian's Docker engine has no BuildKit: the classic builder builds every stage of a Dockerfile
    (a GPU stage would be built for the CPU image) and reads no `# syntax=` directive."""
    for name in ("Dockerfile.tts", "Dockerfile.agent"):
        assert len(values(name, "FROM")) == 1, name
        assert "# syntax=" not in (ROOT / name).read_text(), name
        assert build_args(name)["BASE_IMAGE"] == "python:3.12-slim", name


def test_the_tts_image_variant_is_a_build_argument_and_the_gpu_variant_serves_a_verified_model():
    arguments = build_args("Dockerfile.tts")
    assert arguments["VARIANT"] == "cpu"
    assert re.fullmatch(r"[0-9a-f]{64}", arguments["MODEL_SHA256"])
    (variant,) = [run for run in values("Dockerfile.tts", "RUN") if "$VARIANT" in run]
    gpu = variant[variant.index("gpu)"):variant.index(";;", variant.index("gpu)"))]
    assert "pip uninstall --yes onnxruntime" in gpu
    assert "--require-hashes -r requirements-gpu.lock" in gpu
    assert 'prepare-model --model-url "$MODEL_URL" --model-sha256 "$MODEL_SHA256"' in gpu
    assert "exit 1" in variant, "an unknown variant fails the build"
    environment = values("Dockerfile.tts", "ENV")
    assert "VOICE_AGENT_MODEL_FILE=/opt/model/served.onnx" in environment
    assert any("VOICE_AGENT_VOICES=${VOICES_URL:+/opt/model/voices.bin}" in line for line in environment)
    assert any("VOICE_AGENT_DEFAULT_VOICE=${DEFAULT_VOICE}" in line for line in environment)


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
