"""`voice-agent ask --runtime-arn` calls a deployed agent through AgentCore's InvokeAgentRuntime with
the real boto3 client (SigV4, runtimeSessionId, qualifier). AWS is not reachable here, so a small
stand-in takes boto3's request (endpoint URL override), checks it, and answers with the local
agent's own SSE stream, relayed as it arrives."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.parse

import aiohttp
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from tests.test_end_to_end import expected_sentences
from voice_agent import servers

ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/voice_agent-AbCdEf1234"
SESSION_HEADER = "x-amzn-bedrock-agentcore-runtime-session-id"


def runtime_stand_in(agent_url: str, seen: list[dict]) -> Starlette:
    async def invoke(request: Request):
        seen.append({"path": urllib.parse.unquote(request.url.path), "query": dict(request.query_params),
                     "authorization": request.headers.get("authorization", ""),
                     "session": request.headers.get(SESSION_HEADER, ""), "accept": request.headers.get("accept")})
        if not seen[-1]["authorization"].startswith("AWS4-HMAC-SHA256"):
            return JSONResponse({"message": "missing SigV4 signature"}, status_code=403)
        body = await request.body()
        session = aiohttp.ClientSession()
        upstream = await session.post(f"{agent_url}/invocations", data=body,
                                      headers={"Content-Type": "application/json", SESSION_HEADER: seen[-1]["session"]})

        async def relay():
            try:
                async for chunk in upstream.content.iter_any():
                    yield chunk
            finally:
                upstream.release()
                await session.close()

        return StreamingResponse(relay(), media_type="text/event-stream",
                                 headers={SESSION_HEADER: seen[-1]["session"]})

    return Starlette(routes=[Route("/runtimes/{arn:path}/invocations", invoke, methods=["POST"])])


@pytest.fixture
async def stand_in(agent_server):
    seen: list[dict] = []
    port = servers.free_port()
    server = uvicorn.Server(uvicorn.Config(runtime_stand_in(agent_server("long").http_url, seen), host="127.0.0.1",
                                          port=port, log_level="error"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    yield f"http://127.0.0.1:{port}", seen
    server.should_exit = True
    await task


async def test_ask_runtime_arn_speaks_the_deployed_agents_answer(stand_in, tmp_path):
    url, seen = stand_in
    session_id = "voice-agent-test-session-0123456789abcdef"
    command = [sys.executable, "-m", "voice_agent.cli", "ask", "Why is streaming faster?", "--runtime-arn", ARN,
               "--qualifier", "DEFAULT", "--session-id", session_id, "--endpoint-url", url,
               "--out", str(tmp_path / "answer.wav"), "--json"]
    env = {"AWS_ACCESS_KEY_ID": "AKIDLOCALTESTONLY", "AWS_SECRET_ACCESS_KEY": "local-test-secret-not-real",
           "PATH": "/usr/bin:/bin"}
    completed = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=240,
                                        env=env)
    assert completed.returncode == 0, completed.stderr
    summary = json.loads(completed.stdout)
    assert summary["sentences"] == len(expected_sentences("long"))
    assert summary["audio_seconds"] > 10
    assert summary["time_to_first_audio_ms"] < summary["total_ms"]
    request = seen[-1]
    assert request["path"] == f"/runtimes/{ARN}/invocations"
    assert request["query"] == {"qualifier": "DEFAULT"}
    assert request["session"] == session_id
    assert request["accept"] == "text/event-stream"
    assert "AKIDLOCALTESTONLY" in request["authorization"]
