"""`voice-agent check`: a deployed endpoint proves it can synthesize, through the real SageMaker
client and the local stand-in; an endpoint with the framing bug fails it while its /ping is healthy."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

from tests.support.cli import run_cli
from tests.support.sagemaker import FAKE_CREDENTIALS, buggy_endpoint


def run_check(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("check", *args, "--json", "--timeout", "20", env={**os.environ, **FAKE_CREDENTIALS}, timeout=120)


def test_check_passes_for_a_working_endpoint_through_sagemaker(sagemaker_stand_in):
    stand_in, ca = sagemaker_stand_in
    completed = run_check("--endpoint", "kokoro-tts", "--region", "us-east-1", "--endpoint-url",
                          stand_in.https_url, "--ca-bundle", str(ca))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result = json.loads(completed.stdout.splitlines()[-1])
    assert result["ok"] and [name for name, _, _ in result["checks"]] == [
        "session", "audio", "whole samples", "duration", "not silence", "synthesis_complete"]
    assert all(passed for _, passed, _ in result["checks"])
    assert result["stats"]["received_bytes"] == result["stats"]["audio_bytes"] > 0


def test_check_passes_for_a_container_reached_directly(tts_server):
    completed = run_check("--url", tts_server.ws_url)
    assert completed.returncode == 0, completed.stdout + completed.stderr


async def test_check_fails_an_endpoint_that_pings_healthy_but_cannot_synthesize(artifacts):
    async with buggy_endpoint(artifacts, "check") as (stand_in, ca, _):
        completed = await asyncio.to_thread(run_check, "--endpoint", "kokoro-tts", "--region", "us-east-1",
                                            "--endpoint-url", stand_in.https_url, "--ca-bundle", str(ca))
    assert completed.returncode == 1
    result = json.loads(completed.stdout.splitlines()[-1])
    assert not result["ok"]
    name, passed, detail = result["checks"][0]
    assert name == "session" and not passed and "ModelStreamError" in detail
