"""The Bedrock path with the real ``BedrockModel`` (boto3's bedrock-runtime client: SigV4 signing,
the event-stream parser) against the local ConverseStream stand-in: the agent speaks a Bedrock
answer end to end, the inference settings from the environment reach the wire, and
`voice-agent record` captures a Bedrock stream into the replay format."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from agent.llm.replay import load_recording
from tests.support.answers import expected_sentences, raw_answer
from tests.support.cli import run_cli
from voice_agent.dev import servers

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDBEDROCKTEST", "AWS_SECRET_ACCESS_KEY": "not-a-real-secret",
                    "AWS_REGION": "us-east-1"}
MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


@pytest.fixture(scope="module")
def bedrock(artifacts):
    log = artifacts / "bedrock-local.log"
    log.unlink(missing_ok=True)
    with servers.running(servers.start_bedrock_local("markdown", replay_speed=4.0, log_path=str(log))) as server:
        yield server, log


async def test_the_agent_speaks_a_bedrock_answer_with_the_configured_inference_settings(tts_server, bedrock,
                                                                                         artifacts):
    stand_in, log = bedrock
    env = {**FAKE_CREDENTIALS, "BEDROCK_MODEL_ID": MODEL_ID, "BEDROCK_ENDPOINT_URL": stand_in.http_url,
           "BEDROCK_MAX_TOKENS": "300", "BEDROCK_TEMPERATURE": "0.2", "BEDROCK_TOP_P": "0.9"}
    agent = await asyncio.to_thread(servers.start_agent_server, tts_server.ws_url, model="bedrock", env=env,
                                    log_path=str(artifacts / "agent-bedrock.log"))
    try:
        session = "bedrock-session-0123456789abcdef0123"
        _, first = await raw_answer(agent.http_url, {"prompt": "Explain streaming."}, session)
        _, second = await raw_answer(agent.http_url, {"prompt": "And then?"}, session)
    finally:
        servers.stop(agent)
    assert first[-1]["type"] == "end", first[-1]
    assert [e["text"] for e in first if e["type"] == "sentence"] == expected_sentences("markdown")
    assert "".join(e["text"] for e in first if e["type"] == "text") == load_recording("markdown").text
    assert second[-1]["type"] == "end" and second[0]["turn"] == 2
    requests = [line for line in log.read_text().splitlines() if "ConverseStream" in line]
    assert len(requests) == 2
    assert f"model={MODEL_ID}" in requests[0]
    assert '"maxTokens": 300' in requests[0] and '"temperature": 0.2' in requests[0] and '"topP": 0.9' in requests[0]
    # The second turn carries the conversation: question, answer, question.
    assert "messages=1 " in requests[0] and "messages=3 " in requests[1]


def test_record_captures_a_bedrock_stream_in_the_replay_format(bedrock, tmp_path):
    stand_in, _ = bedrock
    out = tmp_path / "bedrock.jsonl"
    completed = run_cli("record", "--model", "bedrock", "--prompt", "Explain streaming.", "--out", str(out),
                        env={**os.environ, **FAKE_CREDENTIALS, "BEDROCK_MODEL_ID": MODEL_ID,
                             "BEDROCK_ENDPOINT_URL": stand_in.http_url}, timeout=120)
    assert completed.returncode == 0, completed.stderr
    recording = load_recording(out)
    assert recording.text == load_recording("markdown").text
    assert recording.meta["model_id"] == MODEL_ID
    times = [t for t, _ in recording.events]
    assert times == sorted(times) and times[-1] > 0.2, "the stream's own timing is kept"
    assert json.loads(out.read_text().splitlines()[0])["meta"]["prompt"] == "Explain streaming."


async def bedrock_answers(tts_server, artifacts, name: str, faults: list[str], prompts: list[str],
                          recording: str = "long") -> tuple[list, str]:
    """Each prompt's events, asked in one session of an agent on the real BedrockModel against a stand-in
    with ``faults``; and the stand-in's log."""
    log = artifacts / f"bedrock-local-{name}.log"
    log.unlink(missing_ok=True)
    env = {**FAKE_CREDENTIALS, "BEDROCK_MODEL_ID": MODEL_ID}
    with servers.running(servers.start_bedrock_local(recording, replay_speed=4.0, log_path=str(log),
                                                     faults=faults)) as stand_in:
        agent = await asyncio.to_thread(servers.start_agent_server, tts_server.ws_url, model="bedrock",
                                        env={**env, "BEDROCK_ENDPOINT_URL": stand_in.http_url},
                                        log_path=str(artifacts / f"agent-bedrock-{name}.log"))
        try:
            answers = [(await raw_answer(agent.http_url, {"prompt": prompt}, f"bedrock-{name}-0123456789abcdef01"))[1]
                       for prompt in prompts]
        finally:
            servers.stop(agent)
    return answers, log.read_text()


async def test_a_throttled_request_before_the_first_token_is_retried_and_the_answer_spoken(tts_server, artifacts):
    (answer,), log = await bedrock_answers(tts_server, artifacts, "throttled", ["--throttle-first", "1"],
                                           ["Explain streaming."], recording="short")
    assert answer[-1]["type"] == "end", answer[-1]
    assert [e["text"] for e in answer if e["type"] == "sentence"] == expected_sentences("short")
    assert "request 1 throttled" in log and log.count("ConverseStream model=") == 1, "retried once, then served"


async def test_a_stream_error_mid_answer_ends_it_with_model_failed_and_the_conversation_keeps_what_was_spoken(
        tts_server, artifacts):
    # The recording's 67 events end with its last sentences: after 45 the first ones are complete.
    (first, second), log = await bedrock_answers(tts_server, artifacts, "failing", ["--fail-after", "45"],
                                                 ["Explain streaming.", "And then?"])
    assert first[-1]["type"] == "error" and first[-1]["code"] == "model_failed", first[-1]
    assert "modelStreamErrorException" in first[-1]["message"] or "stream" in first[-1]["message"].lower()
    spoken = [e["text"] for e in first if e["type"] == "sentence"
              if any(a["type"] == "audio" and a["index"] == e["index"] for a in first)]
    assert spoken, "sentences were spoken before the stream broke"
    requests = [line for line in log.splitlines() if "ConverseStream model=" in line]
    assert "messages=3 " in requests[1], "the second turn carries the question and what was spoken of the answer"
    said = json.loads(requests[1].split(" said=", 1)[1])
    assert said == " ".join(spoken)
    assert second[-1]["type"] == "error" and second[0]["turn"] == 2
