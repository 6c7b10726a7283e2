"""Reading synthesis streams to their end in the tests."""

from __future__ import annotations

from agent.tts_client import SynthesisStream, TTSError


async def outcomes(streams: list[SynthesisStream]) -> list[str]:
    """Read each stream to its end, in order: "complete", or the code of the error that ended it."""
    codes = []
    for stream in streams:
        try:
            [chunk async for chunk in stream]
            codes.append("complete")
        except TTSError as exc:
            codes.append(exc.code)
    return codes
