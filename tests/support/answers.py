"""Reading an agent's answers in the tests: strictly, against the published event schema."""

from __future__ import annotations

import json

import aiohttp
from jsonschema import Draft202012Validator

from agent.chunker import SentenceChunker
from agent.llm.replay import load_recording
from caller_protocol import INVOCATIONS_PATH, SESSION_HEADER, events

EVENT_SCHEMA = Draft202012Validator(events.schema())


def expected_sentences(recording: str) -> list[str]:
    """The chunks the sentence chunker makes of a recording's whole text."""
    chunker = SentenceChunker()
    return chunker.feed(load_recording(recording).text) + chunker.flush()


async def raw_answer(url: str, payload: dict, session_id: str | None = None) -> tuple[bytes, list[dict]]:
    """POST the payload to the agent at ``url``; the response body and its events, parsed strictly."""
    headers = {SESSION_HEADER: session_id} if session_id else {}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{url}{INVOCATIONS_PATH}", json=payload, headers=headers) as response:
            assert response.status == 200
            assert response.content_type == "text/event-stream"
            body = await response.read()
    return body, parse_sse(body)


def parse_sse(body: bytes) -> list[dict]:
    """Strict parse: the stream must be exactly a sequence of `data: {json}\\n\\n` blocks, each event
    valid against the published schema, numbered from 0, with one end or error event, last."""
    assert body.endswith(b"\n\n")
    blocks = body.decode("utf-8").split("\n\n")[:-1]
    parsed = []
    for block in blocks:
        assert block.startswith("data: ") and "\n" not in block, f"malformed SSE block: {block[:100]!r}"
        event = json.loads(block.removeprefix("data: "))
        EVENT_SCHEMA.validate(event)
        parsed.append(event)
    assert [event["seq"] for event in parsed] == list(range(len(parsed)))
    assert [event["type"] in events.TERMINAL for event in parsed] == [False] * (len(parsed) - 1) + [True]
    return parsed
