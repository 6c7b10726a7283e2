"""Bad input: a fuzzer over the TTS protocol and the agent payload, and the text limits."""

from __future__ import annotations

import json

import pytest
import websockets

import tts_protocol as protocol
from voice_agent.bench.fuzzing import fuzz_agent, fuzz_agent_ws, fuzz_tts, oversize_frame

FUZZ_INPUTS = 2_000


def assert_as_specified(result: dict, leg: str) -> None:
    print(f"\n{leg} fuzz: {result['frames']} inputs -> {result['answers']} at {result['frames_per_second']}/s")
    assert sum(result["answers"].values()) == result["frames"] == FUZZ_INPUTS, "every input got exactly one answer"
    assert result["wrong"] == 0, f"answers the protocol does not specify: {result['wrong_examples']}"
    assert (result["hangs"], result["crashes"]) == (0, 0)
    assert result["valid_request_after"]


async def test_the_tts_protocol_fuzzer_gets_the_specified_error_for_each_input_and_the_session_goes_on(limited_tts):
    result = await fuzz_tts(limited_tts, FUZZ_INPUTS)
    assert_as_specified(result, "TTS")
    assert {protocol.BAD_REQUEST, protocol.UNKNOWN_TYPE, protocol.MESSAGE_TOO_LARGE} <= set(result["answers"])


async def test_a_frame_over_the_limit_closes_only_its_connection(limited_tts):
    result = await oversize_frame(limited_tts.ws_url)
    assert result == {"close_code": 1009, "next_connection_works": True}


async def test_the_agent_payload_fuzzer_gets_the_specified_refusals_and_the_agent_stays_up(agent_server):
    result = await fuzz_agent(agent_server("short"), FUZZ_INPUTS)
    assert_as_specified(result, "agent /invocations")
    assert {"HTTP 400", "invalid_request"} <= set(result["answers"])


async def test_the_ws_fuzzer_gets_the_specified_answer_for_every_message_and_the_connection_goes_on(agent_server):
    result = await fuzz_agent_ws(agent_server("short"), FUZZ_INPUTS)
    assert_as_specified(result, "agent /ws")
    assert {"unreadable", "invalid_request"} <= set(result["answers"])


@pytest.mark.parametrize(("text", "expected"), [
    ("x " * (protocol.MAX_TEXT_CHARS // 2 + 1), protocol.TEXT_TOO_LONG),  # very long
    ("!!! ... ???", protocol.EMPTY_TEXT),  # nothing speakable
    ("😀🎉🚀", protocol.EMPTY_TEXT),  # emoji only
    ("\u0000\u0007\u001b\u0085\u200b", protocol.EMPTY_TEXT),  # control and format characters only
    ("你好世界", protocol.EMPTY_TEXT),  # a script the English voice cannot read
    ("Bell\u0007 and\u0000 escape\u001b characters inside words.", "audio"),
    ("Hello, world. Привет, мир. 你好世界.", "audio"),  # mixed scripts
])
async def test_text_limits(limited_tts, text, expected):
    async with websockets.connect(limited_tts.ws_url) as ws:
        await ws.send(json.dumps({"type": "synthesize", "request_id": "t", "text": text}))
        first = protocol.parse_server_message(await ws.recv())
        if expected == "audio":
            assert isinstance(first, protocol.SynthesisStart)
            audio, words = 0, []
            while not isinstance(message := protocol.parse_server_message(await ws.recv()),
                                 protocol.SynthesisComplete):
                assert isinstance(message, (bytes, protocol.Words))
                if isinstance(message, bytes):
                    audio += len(message)
                else:
                    words += [word.word for word in message.words]
            assert audio == message.stats["audio_bytes"] > 0
            assert words and all(word.isprintable() for word in words), "the words timed are readable ones"
        else:
            assert isinstance(first, protocol.Error) and first.code == expected, first
            assert first.message
