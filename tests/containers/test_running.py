"""The containers started as the README starts them answer with audio: offline with a recording, and
with the real ``BedrockModel`` against the Bedrock stand-in; the TTS container started as SageMaker
starts it passes ``voice-agent check`` through the real SageMaker client; ``docker stop`` ends each
within Docker's 10 s with the answer in flight ended by an error event, not a hang."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from tests.support.answers import expected_sentences
from tests.support.cli import run_cli
from tests.support.containers import AGENT_PORT, offline_agent_line, tts_port
from tests.support.sagemaker import FAKE_CREDENTIALS
from voice_agent.caller import CallerError, Options, ask
from voice_agent.dev import containers, servers
from voice_agent.dev.containers import AGENT_IMAGE, TTS_IMAGE

DOCKER_STOP_SECONDS = 10  # `docker stop` sends SIGKILL after this


async def answer_from(agent: containers.Started, *watched: containers.Started, prompt: str = "What is streaming?"):
    asking = ask(prompt, Options(url=agent.server.http_url))
    return await servers.supervised(asking, [agent.server, *(started.server for started in watched)])


async def test_the_agent_container_answers_offline_with_a_recording(tts_container, start_container):
    agent = start_container(offline_agent_line(), "test-agent", AGENT_PORT)
    answer = await answer_from(agent, tts_container)
    assert [answer.sentences[index] for index in sorted(answer.sentences)] == expected_sentences("short")
    assert set(answer.audio_by_sentence) == set(answer.sentences)
    assert answer.audio_seconds > 1.0 and "error" not in answer.event_types


async def test_the_agent_container_answers_with_the_real_bedrock_model(tts_container, start_container, artifacts):
    line = containers.readme_command("run", AGENT_IMAGE, lambda command: "BEDROCK_MODEL_ID" in command.environment)
    log = artifacts / "bedrock-local-container.log"
    log.unlink(missing_ok=True)
    with servers.running(servers.start_bedrock_local("markdown", replay_speed=4.0, log_path=str(log))) as bedrock:
        # The line passes these through from the caller's environment, as it would a user's credentials.
        env = {**FAKE_CREDENTIALS, "BEDROCK_ENDPOINT_URL": bedrock.http_url}
        agent = start_container(line, "test-agent-bedrock", AGENT_PORT, env=env)
        answer = await answer_from(agent, tts_container)
    assert [answer.sentences[index] for index in sorted(answer.sentences)] == expected_sentences("markdown")
    assert answer.audio_seconds > 1.0 and "error" not in answer.event_types
    requests = [line for line in log.read_text().splitlines() if "ConverseStream" in line]
    assert len(requests) == 1 and f"model={line.environment['BEDROCK_MODEL_ID']}" in requests[0]


def test_the_tts_container_started_as_sagemaker_starts_it_passes_check_through_sagemaker(
        images, start_container, artifacts):
    readme_line = containers.readme_command("run", TTS_IMAGE)
    as_sagemaker = containers.DockerCommand(readme_line.words[:readme_line.words.index(TTS_IMAGE) + 1] + ("serve",))
    tts = start_container(as_sagemaker, "test-tts-sagemaker", 8080)  # `serve`: port 8080, every interface
    tls_dir = artifacts / "sagemaker-tls-container"
    stand_in = servers.start_sagemaker_local(tts.server.ws_url, str(tls_dir),
                                             log_path=str(artifacts / "sagemaker-local-container.log"))
    with servers.running(stand_in):
        completed = run_cli("check", "--endpoint", "kokoro-tts", "--region", "us-east-1", "--endpoint-url",
                            stand_in.https_url, "--ca-bundle", str(tls_dir / "ca.pem"), "--json", "--timeout", "30",
                            env={**os.environ, **FAKE_CREDENTIALS}, timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result = json.loads(completed.stdout.splitlines()[-1])
    assert result["ok"] and result["stats"]["audio_bytes"] > 0


async def ask_until_stopped(agent: containers.Started, stop) -> tuple[CallerError, float]:
    """Ask; once the answer is under way (its first text), ``stop()`` a container in a thread. The
    error the caller got, and the seconds the stop took."""
    under_way = asyncio.Event()

    def watch(event: dict) -> None:
        if event["type"] == "text":
            under_way.set()

    asking = asyncio.create_task(ask("What is streaming?", Options(url=agent.server.http_url, read_timeout=30),
                                     on_event=watch))
    await asyncio.wait_for(under_way.wait(), 120)
    seconds = await asyncio.to_thread(stop)
    with pytest.raises(CallerError) as raised:
        await asyncio.wait_for(asking, 60)
    return raised.value, seconds


# At a fifth of its recorded pace the model writes for a minute: the answer is in flight when stopped.
SLOW_LONG_ANSWER = {"VOICE_AGENT_REPLAY": "long", "VOICE_AGENT_REPLAY_SPEED": "0.2"}


async def test_docker_stop_ends_the_agent_container_in_time_and_its_answer_with_an_error_event(
        engine, tts_container, start_container):
    agent = start_container(offline_agent_line().with_env(**SLOW_LONG_ANSWER), "test-agent-stop", AGENT_PORT)
    error, seconds = await ask_until_stopped(agent, lambda: containers.stop(engine, agent.server, agent.container))
    assert "shutting_down" in str(error)
    assert seconds < DOCKER_STOP_SECONDS, "the agent was killed, not stopped"
    assert agent.server.died()


async def test_docker_stop_ends_the_tts_container_in_time_and_the_answer_with_an_error_event(
        engine, images, start_container):
    port = tts_port(containers.readme_command("run", TTS_IMAGE))
    other = str(port + 2)  # its own TTS container: the shared one keeps serving the other tests
    tts = start_container(containers.readme_command("run", TTS_IMAGE).replaced(str(port), other), "test-tts-stop",
                          int(other))
    line = offline_agent_line().replaced(f":{port}/", f":{other}/").with_env(**SLOW_LONG_ANSWER)
    agent = start_container(line, "test-agent-tts-stop", AGENT_PORT)
    error, seconds = await ask_until_stopped(agent, lambda: containers.stop(engine, tts.server, tts.container))
    assert "tts_failed" in str(error)
    assert seconds < DOCKER_STOP_SECONDS, "the TTS container was killed, not stopped"
