"""A deployed agent through AgentCore's ``InvokeAgentRuntime`` API (boto3, SigV4), its SSE answer
read exactly as a local agent's."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import urllib3.exceptions

from voice_agent.caller.answer import OPEN_TIMEOUT, Answer, CallerError, Collector, Options, new_session_id


def arn_region(arn: str) -> str:
    parts = arn.split(":")
    if len(parts) < 6 or parts[0] != "arn" or not parts[3]:
        raise CallerError(f"not an AgentCore runtime ARN: {arn!r}")
    return parts[3]


def ask_runtime(prompt: str, options: Options, on_event: Callable[[dict[str, Any]], None] | None) -> Answer:
    """Blocking (boto3): run it in a thread from asyncio code."""
    assert options.runtime_arn is not None
    region = options.region or arn_region(options.runtime_arn)
    config = botocore.config.Config(connect_timeout=OPEN_TIMEOUT, read_timeout=options.read_timeout,
                                    retries={"mode": "standard"})
    client = boto3.client("bedrock-agentcore", region_name=region, endpoint_url=options.endpoint_url, config=config)
    request: dict[str, Any] = {
        "agentRuntimeArn": options.runtime_arn, "runtimeSessionId": options.session_id or new_session_id(),
        "payload": json.dumps(options.request(prompt).to_payload()).encode(),
        "contentType": "application/json", "accept": "text/event-stream"}
    if options.qualifier:
        request["qualifier"] = options.qualifier
    collector = Collector(options, on_event)
    deadline = time.monotonic() + options.timeout
    try:
        response = client.invoke_agent_runtime(**request)
    except botocore.exceptions.ClientError as exc:
        raise CallerError(f"InvokeAgentRuntime failed: {exc}") from exc
    if not str(response.get("contentType", "")).startswith("text/event-stream"):
        body = response["response"].read(2000).decode("utf-8", "replace")
        raise CallerError(f"the runtime answered {response.get('contentType')}: {body}")
    try:
        for chunk in response["response"].iter_chunks(chunk_size=16 * 1024):
            collector.feed_sse(chunk)
            if time.monotonic() > deadline:
                raise CallerError(f"the answer took longer than {options.timeout:.0f} s")
    except (botocore.exceptions.BotoCoreError, urllib3.exceptions.HTTPError) as exc:
        raise collector.broken(exc) from exc
    return collector.finish()
