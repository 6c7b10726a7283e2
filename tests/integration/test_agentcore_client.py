"""`voice-agent ask --runtime-arn` calls a deployed agent through AgentCore's InvokeAgentRuntime with
the real boto3 client (SigV4, runtimeSessionId, qualifier), and with `--ws` through AgentCore's
WebSocket route, its upgrade request signed by the AgentCore SDK. AWS is not reachable here, so a
small stand-in takes the request (endpoint URL override), checks it (for the WebSocket, it
recomputes the SigV4 signature for the AWS host the request was signed for), and answers with the
local agent's own stream, relayed as it arrives."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import urllib.parse

import aiohttp
import pytest
import uvicorn
import websockets
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from tests.support.answers import expected_sentences
from tests.support.cli import run_cli
from voice_agent.dev import servers

ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/voice_agent-AbCdEf1234"
AWS_HOST = "bedrock-agentcore.us-east-1.amazonaws.com"
KEY_ID, SECRET = "AKIDLOCALTESTONLY", "local-test-secret-not-real"
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

    async def converse(websocket: WebSocket):
        raw_path = websocket.scope["raw_path"].decode()
        query = websocket.scope["query_string"].decode()
        seen.append({"path": urllib.parse.unquote(raw_path), "query": dict(websocket.query_params),
                     "session": websocket.headers.get(SESSION_HEADER, ""),
                     "signature_valid": signature_valid(websocket.headers, raw_path, query)})
        if not seen[-1]["signature_valid"]:
            await websocket.close(code=1008)  # refused before the upgrade: HTTP 403
            return
        await websocket.accept()
        async with websockets.connect(agent_url.replace("http://", "ws://") + "/ws", max_size=None,
                                      additional_headers={SESSION_HEADER: seen[-1]["session"]}) as upstream:
            async def to_agent():
                with contextlib.suppress(WebSocketDisconnect):
                    while True:
                        message = await websocket.receive()
                        if message["type"] == "websocket.disconnect":
                            return
                        await upstream.send(message.get("text") or message.get("bytes"))

            async def to_caller():
                async for message in upstream:
                    if isinstance(message, bytes):
                        await websocket.send_bytes(message)
                    else:
                        await websocket.send_text(message)

            relays = [asyncio.create_task(to_agent()), asyncio.create_task(to_caller())]
            await asyncio.wait(relays, return_when=asyncio.FIRST_COMPLETED)
            for relay in relays:
                relay.cancel()

    return Starlette(routes=[Route("/runtimes/{arn:path}/invocations", invoke, methods=["POST"]),
                             WebSocketRoute("/runtimes/{arn:path}/ws", converse)])


def signature_valid(headers, raw_path: str, query: str) -> bool:
    """Recompute the SigV4 signature of the upgrade request for the AWS host it was signed for."""
    authorization = headers.get("authorization", "")
    if "x-amz-date" not in headers or not authorization.startswith("AWS4-HMAC-SHA256"):
        return False
    url = f"https://{AWS_HOST}{raw_path}" + (f"?{query}" if query else "")
    request = AWSRequest(method="GET", url=url, headers={"host": AWS_HOST, "x-amz-date": headers["x-amz-date"]})
    request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(Credentials(KEY_ID, SECRET), "bedrock-agentcore", "us-east-1")
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return authorization.endswith(f"Signature={expected}")


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
    env = {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "PATH": "/usr/bin:/bin"}
    completed = await asyncio.to_thread(
        run_cli, "ask", "Why is streaming faster?", "--runtime-arn", ARN, "--qualifier", "DEFAULT", "--session-id",
        session_id, "--endpoint-url", url, "--out", str(tmp_path / "answer.wav"), "--json", timeout=240, env=env)
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


async def run_ask_ws(url: str, session_id: str, out: str, secret: str = SECRET) -> subprocess.CompletedProcess:
    env = {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": secret, "PATH": "/usr/bin:/bin"}
    return await asyncio.to_thread(
        run_cli, "ask", "Why is streaming faster?", "--ws", "--runtime-arn", ARN, "--qualifier", "live", "--session-id",
        session_id, "--endpoint-url", url.replace("http://", "ws://"), "--out", out, "--json", timeout=240, env=env)


async def test_ask_ws_runtime_arn_speaks_over_the_signed_websocket_route(stand_in, tmp_path):
    url, seen = stand_in
    session_id = "voice-agent-test-session-ws-0123456789abcdef"
    completed = await run_ask_ws(url, session_id, str(tmp_path / "answer.wav"))
    assert completed.returncode == 0, completed.stderr
    summary = json.loads(completed.stdout)
    assert summary["sentences"] == len(expected_sentences("long"))
    assert summary["audio_seconds"] > 10
    request = seen[-1]
    assert request["path"] == f"/runtimes/{ARN}/ws"
    assert request["query"] == {"qualifier": "live"}
    assert request["session"] == session_id
    assert request["signature_valid"], "the caller sent what the AgentCore SDK signed"


async def test_ask_ws_runtime_arn_with_wrong_credentials_fails_clearly(stand_in, tmp_path):
    url, seen = stand_in
    completed = await run_ask_ws(url, "voice-agent-test-session-ws-wrong-0123456789", str(tmp_path / "a.wav"),
                                 secret="not-the-secret")
    assert completed.returncode == 1
    assert seen[-1]["signature_valid"] is False
    assert "error:" in completed.stderr and "403" in completed.stderr
