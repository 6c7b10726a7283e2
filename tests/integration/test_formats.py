"""The caller's audio formats: each answer is ONE continuous stream (one header, no gap, nothing
lost across sentences), checked by decoding it with FFmpeg and comparing it with the same answer
in raw PCM (Kokoro is deterministic, so the PCM is the reference)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from agent.audio_encoding import FORMATS, StreamEncoder
from caller_protocol import events as caller_events
from tests.support import audio
from tests.support.answers import raw_answer

HEADER_MARKERS = {"wav": b"RIFF", "mp3": b"ID3", "aac": b"ftyp", "opus": b"OpusHead"}
"""Bytes that begin each format's stream header: a second one would be a header mid-stream."""


async def answer_audio(url: str, fmt: str) -> tuple[list[bytes], list[dict]]:
    _, events = await raw_answer(url, {"prompt": "Go.", "format": fmt})
    assert events[0]["format"] == fmt and events[-1]["type"] == "end"
    return [base64.b64decode(e["audio"]) for e in events if e["type"] == "audio"], events


@pytest.fixture(scope="module")
def reference(agent_server):
    """The answer in raw PCM: more than one sentence, so format streams cross sentence boundaries."""
    import asyncio

    url = agent_server("short").http_url
    chunks, events = asyncio.run(answer_audio(url, "pcm16"))
    assert len({e["index"] for e in events if e["type"] == "audio"}) >= 2
    return url, audio.samples(b"".join(chunks)), events[-1]["metrics"]["audio_seconds"]


@pytest.mark.parametrize("fmt", ["wav", "mp3", "aac", "opus"])
async def test_a_format_is_one_continuous_stream_of_the_whole_answer(reference, fmt):
    url, pcm, seconds = reference
    chunks, events = await answer_audio(url, fmt)
    stream = b"".join(chunks)
    assert stream.count(HEADER_MARKERS[fmt]) == 1, "exactly one header, at the start"
    assert stream.startswith(b"RIFF" if fmt == "wav" else stream[:4]) and HEADER_MARKERS[fmt] in chunks[0]
    # A player can start on the first chunk: it decodes on its own.
    assert audio.decode(chunks[0]).size > 0
    decoded = audio.decode(stream)
    assert events[-1]["metrics"]["audio_seconds"] == seconds
    assert events[-1]["metrics"]["audio_bytes"] == len(stream)
    # Nothing lost, no gap inserted: as long as the PCM, give or take the codec's padding.
    assert abs(len(decoded) / 24_000 - seconds) < 0.1, (len(decoded) / 24_000, seconds)
    if fmt == "wav":
        assert np.array_equal(decoded, pcm)
    else:
        match = audio.best_envelope_match(audio.envelope(pcm), audio.envelope(decoded))
        assert match > 0.95, f"{fmt} does not sound like the PCM answer (envelope correlation {match:.3f})"


@pytest.mark.parametrize("fmt", ["mp3", "aac", "opus"])
def test_encoders_produce_their_labelled_bit_rate(fmt):
    """Ten seconds of real speech-like signal: the measured rate is near the label (containers add
    their framing on top)."""
    rng = np.random.default_rng(3)
    t = np.arange(240_000) / 24_000
    signal = (0.3 * np.sin(2 * np.pi * 180 * t) * (1 + np.sin(2 * np.pi * 3 * t)) + 0.02 * rng.standard_normal(t.size))
    encoder = StreamEncoder(fmt)
    pcm = (signal * 32767).astype("<i2").tobytes()
    size = sum(len(encoder.encode(pcm[i:i + 9_601])) for i in range(0, len(pcm), 9_601)) + len(encoder.finish())
    kbps = size * 8 / 10 / 1000
    label = FORMATS[fmt].bit_rate / 1000
    assert label * 0.8 < kbps < label * 1.5, f"{fmt}: {kbps:.1f} kbps for a {label:.0f} kbps label"


def test_pcm_chunks_of_odd_length_are_joined_not_dropped():
    encoder = StreamEncoder("pcm16")
    assert encoder.encode(b"\x01\x02\x03") + encoder.encode(b"\x04") + encoder.finish() == b"\x01\x02\x03\x04"
    broken = StreamEncoder("pcm16")
    broken.encode(b"\x01")
    with pytest.raises(ValueError, match="middle of a sample"):
        broken.finish()


def test_the_event_schema_lists_exactly_the_formats_the_agent_encodes():
    schema = caller_events.schema()
    start = next(s for s in schema["oneOf"] if s["properties"]["type"]["const"] == "start")
    assert start["properties"]["format"]["enum"] == list(FORMATS)

