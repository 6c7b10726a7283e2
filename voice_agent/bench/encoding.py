"""The encoding measurement of the AWS guide, reproduced: 24 clips of real Kokoro speech encoded as
the caller's formats, measured bit rate, bytes, Base64 bytes and growth, next to the reference
(MP3 labelled 48k measured 49.5 kbps; AAC labelled 32k in fMP4 measured 41.6 kbps; Base64 grew MP3
308,304 -> 411,072 bytes and AAC 258,039 -> 344,084, about 33%).

Each clip is one sentence synthesized by the real TTS server (started here) and encoded with the
agent's own ``StreamEncoder``, fed in the TTS server's 200 ms frames as in an answer; the time the
encoder took is reported per second of audio, as its share of the real-time budget.
"""

from __future__ import annotations

import asyncio
import base64
import platform
import time
from pathlib import Path
from typing import Any

import tts_protocol
from agent.audio_encoding import FORMATS, StreamEncoder
from agent.tts_client import TTSSession
from voice_agent.bench import plots, write_results
from voice_agent.dev import servers

CLIPS = [
    "Streaming speech lets a voice agent start talking before it has finished thinking.",
    "Each sentence is synthesized as soon as the model completes it.",
    "Listeners hear the first words while the rest is being written.",
    "The wait before the first sound shrinks to one sentence.",
    "A persistent session avoids a new connection for every sentence.",
    "Requests are pipelined, so the next sentence is ready when the last one ends.",
    "The chunker decides where a sentence ends, even with abbreviations like Dr. Smith.",
    "Numbers such as 3.5 percent and $42.50 are read as words.",
    "If the caller interrupts, the model and the speech stop at once.",
    "Audio can be sent as raw samples, or compressed for slower networks.",
    "Compressed audio is smaller, but Base64 makes every byte a third larger.",
    "A binary WebSocket removes that overhead entirely.",
    "The endpoint scales with the number of concurrent conversations.",
    "On a graphics card, a sentence takes a fraction of its spoken length to render.",
    "On two processor cores, it still runs faster than real time.",
    "The first chunk may end at a comma to speak even sooner.",
    "Markdown, lists and code blocks are never read aloud.",
    "Every network wait has a timeout, and every queue has a limit.",
    "When the text ends without punctuation, the tail is still spoken.",
    "Sessions remember the conversation across turns.",
    "A recorded model stream makes every measurement repeatable.",
    "The same sentence always produces the same samples.",
    "Time to first audio is what the listener notices most.",
    "That is the number this project exists to make small.",
]
REFERENCE = {
    "mp3": {"label_kbps": 48, "measured_kbps": 49.5, "bytes": 308_304, "base64_bytes": 411_072},
    "aac": {"label_kbps": 32, "measured_kbps": 41.6, "bytes": 258_039, "base64_bytes": 344_084},
    "machine": "AWS guide, 24 clips",
}


async def synthesize(url: str, clips: list[str]) -> list[list[bytes]]:
    """Each clip's PCM, in the frames the server sent."""
    frames: list[list[bytes]] = []
    async with TTSSession(url) as tts:
        streams = [await tts.synthesize(text) for text in clips]  # pipelined
        for stream in streams:
            frames.append([chunk async for chunk in stream])
    return frames


def encode(fmt: str, clips: list[list[bytes]], trials: int) -> dict[str, Any]:
    """Sizes of each clip's stream; the encoder's time is the fastest of ``trials`` runs per clip."""
    total_bytes = base64_bytes = 0
    seconds = encode_seconds = 0.0
    for frames in clips:
        timings = []
        for _ in range(trials):
            started = time.perf_counter()
            encoder = StreamEncoder(fmt)
            data = b"".join(encoder.encode(frame) for frame in frames) + encoder.finish()
            timings.append(time.perf_counter() - started)
        encode_seconds += min(timings)
        total_bytes += len(data)
        base64_bytes += len(base64.b64encode(data))
        seconds += tts_protocol.pcm16_seconds(sum(len(frame) for frame in frames))
    label = FORMATS[fmt].bit_rate
    return {"label_kbps": label / 1000 if label else None, "measured_kbps": round(total_bytes * 8 / seconds / 1000, 1),
            "bytes": total_bytes, "base64_bytes": base64_bytes, "growth": round(base64_bytes / total_bytes - 1, 3),
            "audio_seconds": round(seconds, 2),
            "encode_ms_per_audio_second": round(encode_seconds * 1000 / seconds, 2)}


def markdown(results: dict[str, Any]) -> str:
    rows = ["| format | label | measured | bytes | Base64 bytes | growth | encode time per audio second |",
            "|---|---|---|---|---|---|---|"]
    for fmt, figures in results["formats"].items():
        label = f"{figures['label_kbps']:g} kbps" if figures["label_kbps"] else "-"
        rows.append(f"| {fmt} | {label} | {figures['measured_kbps']} kbps | {figures['bytes']:,} | "
                    f"{figures['base64_bytes']:,} | +{figures['growth']:.1%} | "
                    f"{figures['encode_ms_per_audio_second']} ms |")
    for fmt in ("mp3", "aac"):
        ref = REFERENCE[fmt]
        rows.append(f"| {fmt}, reference | {ref['label_kbps']} kbps | {ref['measured_kbps']} kbps | "
                    f"{ref['bytes']:,} | {ref['base64_bytes']:,} | +{ref['base64_bytes'] / ref['bytes'] - 1:.1%} | |")
    return "\n".join([
        f"{results['clips']} clips of Kokoro speech ({results['formats']['pcm16']['audio_seconds']} s), each "
        f"encoded as one stream in the TTS server's 200 ms frames; {results['machine']}.", "", *rows, "",
        "Base64 (the SSE leg) adds a third to every format; the binary `/ws` leg sends the bytes as they are."])


QUICK_CLIPS = 4
"""With ``quick``: the clips encoded (the first ones)."""


def main(out_dir: Path, trials: int = 3, quick: bool = False) -> dict[str, Any]:
    """Sizes are the same every run; ``trials`` repeats the encoding for its timing."""
    clips = CLIPS[:QUICK_CLIPS] if quick else CLIPS
    trials = 1 if quick else trials
    with servers.running(servers.start_tts_server(progress=print)) as tts:
        pcm = asyncio.run(synthesize(tts.ws_url, clips))
    results = {"clips": len(pcm), "formats": {fmt: encode(fmt, pcm, trials) for fmt in FORMATS},
               "reference": REFERENCE, "machine": platform.platform()}
    write_results(out_dir, "encoding", results, markdown(results), plots.encoding)
    return results
