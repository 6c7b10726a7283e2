"""The fault campaign's pure parts: the proxy's reading and writing of WebSocket frames, and the
judge that compares an answer with the undisturbed reference."""

from __future__ import annotations

import asyncio

import pytest

from voice_agent.bench.faults import Answered, judge
from voice_agent.dev.fault_proxy import OPCODE_BINARY, OPCODE_TEXT, FaultProxy, parse_frame, text_frame


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536])
def test_a_server_frame_of_any_length_is_read_whole_and_only_when_whole(size):
    frame = text_frame("x" * size)
    assert parse_frame(frame + b"\x82\x00") == (OPCODE_TEXT, b"x" * size, len(frame))
    assert parse_frame(frame[:-1]) is None if size else parse_frame(frame[:1]) is None


def test_a_binary_frame_is_told_from_a_text_frame():
    assert parse_frame(b"\x82\x03abc") == (OPCODE_BINARY, b"abc", 5)


def answered(ended: str, sentences: list[tuple[int, str]], audio: dict[int, bytes], error: str = "") -> Answered:
    result = Answered()
    result.sentences, result.ended, result.error = sentences, ended, error
    result.audio = {index: bytearray(data) for index, data in audio.items()}
    return result


REFERENCE = answered("end", [(0, "One."), (1, "Two.")], {0: b"aaaa", 1: b"bbbb"})


def test_an_answer_like_the_reference_recovered():
    assert judge(answered("end", REFERENCE.sentences, {0: b"aaaa", 1: b"bbbb"}), REFERENCE)["outcome"] == "recovered"


def test_a_lost_a_repeated_and_a_corrupted_sentence_are_each_counted():
    lost = judge(answered("end", [(0, "One.")], {0: b"aaaa"}), REFERENCE)
    repeated = judge(answered("end", [(0, "One."), (0, "One."), (1, "Two.")], {0: b"aaaa", 1: b"bbbb"}), REFERENCE)
    corrupted = judge(answered("end", REFERENCE.sentences, {0: b"aaaa", 1: b"bbXb"}), REFERENCE)
    assert (lost["lost"], lost["outcome"]) == (1, "damaged")
    assert (repeated["duplicated"], repeated["outcome"]) == (1, "damaged")
    assert (corrupted["corrupted"], corrupted["outcome"]) == (1, "damaged")


def test_an_error_after_whole_and_cut_sentences_failed_cleanly_but_not_after_wrong_audio():
    clean = answered("error", REFERENCE.sentences, {0: b"aaaa", 1: b"bb"}, "tts_failed: timeout")
    wrong = answered("error", REFERENCE.sentences, {0: b"aaXa"}, "tts_failed: timeout")
    assert judge(clean, REFERENCE)["outcome"] == "failed_cleanly"
    assert judge(wrong, REFERENCE)["outcome"] == "damaged"
    assert judge(answered("broken", [], {}), REFERENCE)["outcome"] == "damaged"



class _Held(asyncio.Event):
    """A stall the test releases, which tells when the proxy holds the server's frames."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = asyncio.Event()

    async def wait(self) -> None:
        self.holding.set()
        await super().wait()


async def test_no_fault_lands_on_a_connection_the_agent_has_left():
    """Frames held by a stall are not forwarded once the agent has left the connection, and an
    armed error reply does not land there (it waits for a live connection)."""
    from voice_agent.dev.fault_proxy import FaultProxy

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")
        await writer.drain()
        await reader.read(1)  # the proxy's upgrade is through: the answer's next piece
        writer.write(text_frame('{"type": "words", "request_id": "r-1", "words": []}'))
        await writer.drain()
        await reader.read()

    upstream = await asyncio.start_server(server, "127.0.0.1", 0)
    proxy = FaultProxy(upstream.sockets[0].getsockname()[1])
    await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"GET / HTTP/1.1\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n")
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)).startswith(b"HTTP/1.1 101")
        proxy.inject("error_reply")
        proxy._released = held = _Held()
        writer.write(b"x")
        await asyncio.wait_for(held.holding.wait(), 5)  # the words frame is in the proxy's hands
        writer.write_eof()  # the agent leaves
        (link,) = proxy.links
        await asyncio.wait_for(_until(lambda: link.server.transport.is_closing()), 5)
        held.set()
        await asyncio.wait_for(_until(lambda: not proxy.links), 5)
        try:
            received = await asyncio.wait_for(reader.read(), 5)
        except ConnectionResetError:
            received = b""
        assert received == b"" and proxy.injected == []
        writer.close()
    finally:
        await proxy.close()
        upstream.close()


async def _until(condition, interval: float = 0.01) -> None:
    while not condition():
        await asyncio.sleep(interval)


def test_closing_the_proxy_ends_its_links_and_their_handlers_even_during_a_stall(caplog):
    async def scenario() -> int:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(100):
                writer.write(data)

        upstream = await asyncio.start_server(echo, "127.0.0.1", 0)
        proxy = FaultProxy(upstream.sockets[0].getsockname()[1], stall_seconds=60)
        port = await proxy.start()
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        for reader, writer in clients:  # the request echoed back through the proxy: its link is up
            writer.write(b"GET / HTTP/1.1\r\n\r\n")
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        assert len(proxy.links) == 3
        proxy.inject("stall")
        await proxy.close()
        upstream.close()
        return len(proxy.links)

    assert asyncio.run(scenario()) == 0
    assert not [record for record in caplog.records if record.name == "asyncio"], caplog.text
