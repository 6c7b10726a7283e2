"""Speech that stalls: a listener who starts playing at the first audio and plays at real time, with
no buffer of their own. Whenever the next audio arrives after everything received so far has been
played, the listener hears silence the voice did not mean (an underrun), and playback resumes when
the audio arrives.

The simulation uses only what the caller saw: when each audio event arrived and how long its audio
lasts. ``bench agent`` runs it per packaged recording at 1, 2 and 3 concurrent sessions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import tts_protocol
from voice_agent.bench.tts import summarize
from voice_agent.caller import Answer, Options, ask

UNDERRUN_TOLERANCE_MS = 1.0
"""A gap up to this long is not counted: the caller's clock has 0.1 ms resolution and an event
loop's wake-up jitter is of this order; any audio player's device buffer hides it."""
LEVELS = (1, 2, 3)
"""Concurrent sessions the playback is simulated at."""


@dataclass(frozen=True)
class Playback:
    underruns: int
    """Times the listener ran out of audio before the answer's audio ended."""
    silence_ms: float
    """Silence inserted mid-answer by those underruns, in total."""
    longest_ms: float
    """The longest of them."""
    audio_ms: float
    """The answer's audio."""


def simulate(arrivals: Iterable[tuple[float, float]], tolerance_ms: float = UNDERRUN_TOLERANCE_MS) -> Playback:
    """``arrivals``: (when the audio arrived, how long it plays), both in milliseconds, in order."""
    underruns, silence, longest, audio = 0, 0.0, 0.0, 0.0
    played_until: float | None = None
    for arrived, duration in arrivals:
        if played_until is None:
            played_until = arrived
        elif arrived > played_until:
            gap = arrived - played_until
            if gap > tolerance_ms:
                underruns, silence, longest = underruns + 1, silence + gap, max(longest, gap)
            played_until = arrived
        played_until += duration
        audio += duration
    return Playback(underruns, round(silence, 1), round(longest, 1), round(audio, 1))


def of_answer(answer: Answer) -> Playback:
    """The playback of an answer received as ``pcm16`` (whose bytes say how long they play)."""
    if answer.format != tts_protocol.FORMAT_PCM16:
        raise ValueError("the playback simulation needs pcm16 audio")
    return simulate((arrived, tts_protocol.pcm16_seconds(size, answer.sample_rate) * 1000)
                    for arrived, size in answer.audio_arrivals)


async def measure(urls: dict[str, str], levels: tuple[int, ...] = LEVELS) -> dict[str, Any]:
    """Per recording (``urls``: the agent replaying it) and per level: every session's playback,
    the answers asked at once."""
    results: dict[str, Any] = {}
    for recording, url in urls.items():
        results[recording] = {}
        for level in levels:
            answers = await asyncio.gather(*(ask("Go.", Options(url=url)) for _ in range(level)))
            playbacks = [of_answer(answer) for answer in answers]
            results[recording][str(level)] = {
                "underruns": sum(p.underruns for p in playbacks),
                "silence_ms": round(sum(p.silence_ms for p in playbacks), 1),
                "longest_ms": max(p.longest_ms for p in playbacks),
                "first_audio_ms": summarize([answer.time_to_first_audio_ms for answer in answers]),
                "sessions": [asdict(p) for p in playbacks]}
    return results


def markdown(results: dict[str, Any]) -> str:
    levels = sorted({level for by_level in results.values() for level in by_level}, key=int)
    header = " | ".join(f"{level} session{'s' if level != '1' else ''}" for level in levels)
    rows = [f"| recording | {header} |", "|---|" + "---|" * len(levels)]
    for recording, by_level in results.items():
        cells = [f"{by_level[level]['underruns']} underruns, {by_level[level]['silence_ms']:,.0f} ms silence"
                 if level in by_level else "" for level in levels]
        rows.append(f"| `{recording}` | " + " | ".join(cells) + " |")
    return "\n".join(["Playback at real time from the first audio, no buffer (underruns and silence inserted "
                      "mid-answer, summed over the sessions):", "", *rows])
