"""Secrets stay out of the logs, every route limits its input, and the local servers listen on
loopback unless told otherwise."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
import websockets

from agent.entrypoint import MAX_PAYLOAD_BYTES
from tests.support.answers import raw_answer
from voice_agent.cli import build_parser
from voice_agent.dev import servers

PLANTED_SECRET = "planted-secret-value-4f1c9e27b3"
PLANTED_TOKEN = "planted-session-token-8d2a61"


@pytest.mark.parametrize("command", [["serve-tts"], ["serve-agent"], ["sagemaker-local", "--container-url", "ws://x"]])
def test_local_servers_bind_to_loopback_by_default(command):
    assert build_parser().parse_args(command).host == "127.0.0.1"


async def test_a_planted_credential_never_reaches_the_logs(tts_server, sagemaker_stand_in, artifacts):
    stand_in, ca = sagemaker_stand_in
    log = artifacts / "agent-planted-secret.log"
    log.unlink(missing_ok=True)
    env = {"AWS_ACCESS_KEY_ID": "AKIDPLANTEDTEST", "AWS_SECRET_ACCESS_KEY": PLANTED_SECRET,
           "AWS_SESSION_TOKEN": PLANTED_TOKEN, "SAGEMAKER_ENDPOINT_NAME": "kokoro-tts",
           "SAGEMAKER_REGION": "us-east-1", "SAGEMAKER_ENDPOINT_URL": stand_in.https_url,
           "SAGEMAKER_CA_BUNDLE": str(ca)}
    agent = await asyncio.to_thread(servers.start_agent_server, "ws://127.0.0.1:9/unused", replay="short",
                                    replay_speed=4.0, log_path=str(log), env=env)
    try:
        _, events = await raw_answer(agent.http_url, {"prompt": "Hello."})
        _, refused = await raw_answer(agent.http_url, {"prompt": "", "secret": PLANTED_SECRET})
    finally:
        servers.stop(agent)
    assert events[-1]["type"] == "end", events[-1]  # the credentials were used: the answer went through SageMaker
    assert refused[-1]["type"] == "error"
    text = log.read_text(errors="replace")
    assert "answer finished" in text and "Invocation completed" in text, "the log was written"
    for secret in (PLANTED_SECRET, PLANTED_TOKEN):
        assert secret not in text
        assert secret not in (artifacts / "sagemaker-local.log").read_text(errors="replace")


async def test_the_agent_refuses_oversized_input_on_every_route(agent_server):
    """/invocations: 413 by Content-Length and for a chunked body as it streams in; /ws: a message
    over the limit closes that connection with 1009. The agent stays healthy."""
    url = agent_server("short").http_url
    big = json.dumps({"prompt": "x" * (MAX_PAYLOAD_BYTES + 1)}).encode()

    async def chunked():
        for offset in range(0, len(big), 8192):
            yield big[offset:offset + 8192]

    async with aiohttp.ClientSession() as client:
        for body in (big, chunked()):
            async with client.post(f"{url}/invocations", data=body,
                                   headers={"Content-Type": "application/json"}) as response:
                assert response.status == 413
                assert "too large" in (await response.json())["error"].lower()
        async with websockets.connect(url.replace("http", "ws") + "/ws", max_size=None) as ws:
            await ws.send(json.dumps({"type": "ask", "prompt": "x" * (MAX_PAYLOAD_BYTES + 1)}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd.code == 1009
        async with client.get(f"{url}/ping") as ping:
            assert ping.status == 200
