"""The SageMaker leg in the tests: a connector with throwaway credentials, and a buggy container
behind the local stand-in."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import boto3
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute

from agent.transports.sagemaker import Boto3CredentialsResolver, SageMakerConnector
from tts_protocol import BIDI_PATH
from voice_agent.dev import servers

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDLOCALTESTONLY", "AWS_SECRET_ACCESS_KEY": "local-test-secret-not-real"}


def connector(https_url: str, ca: Path, **options) -> SageMakerConnector:
    session = boto3.Session(aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1")
    return SageMakerConnector("kokoro-tts", "us-east-1", endpoint_uri=https_url, ca_file=ca,
                              credentials=Boto3CredentialsResolver(session), **options)


def text_frames_only_app() -> Starlette:
    """A container with the framing bug: its handler reads only text frames, its /ping is healthy."""
    async def ping(request):
        return JSONResponse({"status": "Healthy"})

    async def stream(websocket):
        await websocket.accept()
        while True:
            message = await websocket.receive_text()  # fails on SageMaker's binary frames
            await websocket.send_text(message)

    return Starlette(routes=[Route("/ping", ping), WebSocketRoute(BIDI_PATH, stream)])


@contextlib.asynccontextmanager
async def buggy_endpoint(artifacts: Path, name: str) -> AsyncIterator[tuple[servers.Server, Path, int]]:
    """The SageMaker stand-in in front of a text-frames-only container: the stand-in, its CA, and
    the container's port."""
    port = servers.free_port()
    container = uvicorn.Server(uvicorn.Config(text_frames_only_app(), host="127.0.0.1", port=port, log_level="error"))
    task = asyncio.create_task(container.serve())
    try:
        while not container.started:
            await asyncio.sleep(0.05)
        stand_in = await asyncio.to_thread(
            servers.start_sagemaker_local, f"ws://127.0.0.1:{port}{BIDI_PATH}",
            str(artifacts / f"sagemaker-tls-{name}"), log_path=str(artifacts / f"sagemaker-local-{name}.log"))
        try:
            yield stand_in, artifacts / f"sagemaker-tls-{name}" / "ca.pem", port
        finally:
            servers.stop(stand_in)
    finally:
        container.should_exit = True
        await task
