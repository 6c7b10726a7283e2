"""Bad input: a fuzzer over the TTS protocol and the agent payload, and the text limits."""

from __future__ import annotations

import json

import pytest
import websockets

import tts_protocol as protocol
from voice_agent.bench.reliability import fuzz_agent, fuzz_agent_ws, fuzz_tts, oversize_frame

FUZZ_INPUTS = 300


async def test_the_tts_protocol_fuzzer_gets_clear_errors_and_the_session_goes_on(limited_tts):
    result = await fuzz_tts(limited_tts.ws_url, FUZZ_INPUTS)
    print(f"\nTTS fuzz: {result['inputs']} inputs -> {result['outcomes']}")
    assert sum(result["outcomes"].values()) == FUZZ_INPUTS, "every input got exactly one answer"
    assert set(result["outcomes"]) - {"synthesized"} <= {
        protocol.BAD_REQUEST, protocol.UNKNOWN_TYPE, protocol.MESSAGE_TOO_LARGE, protocol.TEXT_TOO_LONG,
        protocol.EMPTY_TEXT, protocol.UNKNOWN_VOICE, protocol.BAD_SPEED, protocol.UNSUPPORTED_FORMAT}
    assert result["valid_request_after"]


async def test_a_frame_over_the_limit_closes_only_its_connection(limited_tts):
    result = await oversize_frame(limited_tts.ws_url)
    assert result == {"close_code": 1009, "next_connection_works": True}


async def test_the_agent_payload_fuzzer_gets_clear_refusals_and_the_agent_stays_up(agent_server):
    result = await fuzz_agent(agent_server("short").http_url, 150)
    print(f"\nagent fuzz: {result['inputs']} inputs -> {result['outcomes']}")
    assert sum(result["outcomes"].values()) == 150 and result["alive_after"]


async def test_the_ws_fuzzer_gets_an_error_for_every_message_and_the_connection_goes_on(agent_server):
    result = await fuzz_agent_ws(agent_server("short").http_url, 200)
    print(f"\nagent /ws fuzz: {result['inputs']} messages -> {result['outcomes']}, then a valid ask: "
          f"{result['audio_bytes_after']} bytes of audio")
    assert sum(result["outcomes"].values()) == 200, "every message got exactly one error"
    assert result["outcomes"]["unreadable message"] and result["outcomes"]["invalid ask"]
    assert result["valid_ask_after"]


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
