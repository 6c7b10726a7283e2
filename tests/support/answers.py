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


def heard_by(events: list[dict], played_ms: float) -> str:
    """What a listener heard of a pcm16 answer by ``played_ms`` of its audio, worked out from the
    events alone: the chunks whose audio had ended before a later chunk's began (as written), then
    the words of the chunk playing at that point whose middle had been played and received (as
    spoken). Chunks without audio are skipped."""
    audio_ms: dict[int, float] = {}
    for event in events:
        if event["type"] == "audio":
            audio_ms[event["index"]] = audio_ms.get(event["index"], 0.0) + len(event["audio"]) / 2 * 1000 / 24_000
    words = {event["index"]: event["words"] for event in events if event["type"] == "words"}
    voiced = [event for event in events if event["type"] == "sentence" and event["index"] in audio_ms]
    parts, start = [], 0.0
    for number, sentence in enumerate(voiced):
        end = start + audio_ms[sentence["index"]]
        if start >= played_ms:
            break
        if end <= played_ms and number + 1 < len(voiced):
            parts.append(sentence["text"])
        else:
            reached = min(played_ms, end)
            parts += [w["word"] for w in words[sentence["index"]] if (w["start_ms"] + w["end_ms"]) / 2 <= reached]
            break
        start = end
    return " ".join(parts)
