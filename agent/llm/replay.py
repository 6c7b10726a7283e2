"""A Strands model that replays a recorded Bedrock ConverseStream at its recorded pace.

Recording format (JSONL): an optional first line ``{"meta": {...}}`` describing the recording,
then one line per stream event, ``{"t": SECONDS_SINCE_REQUEST, "event": CONVERSE_STREAM_EVENT}``,
where the event is exactly what Bedrock's ConverseStream (and so Strands' ``BedrockModel``)
yields: ``messageStart``, ``contentBlockDelta``, ``contentBlockStop``, ``messageStop``,
``metadata``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from agent.recordings import RECORDINGS, packaged_recordings


class RecordingError(ValueError):
    pass


@dataclass(frozen=True)
class Recording:
    meta: dict[str, Any]
    events: list[tuple[float, StreamEvent]]

    @property
    def text(self) -> str:
        """The answer's text: every text delta, joined."""
        return "".join(event.get("contentBlockDelta", {}).get("delta", {}).get("text", "")
                       for _, event in self.events)


def load_recording(name_or_path: str | Path) -> Recording:
    """Load a packaged recording by name (``long``) or any recording file by path."""
    candidate = RECORDINGS / f"{name_or_path}.jsonl"
    source = candidate if candidate.is_file() else Path(name_or_path)
    if not source.is_file():
        raise RecordingError(f"no recording {name_or_path!r}: not a file, nor one of {packaged_recordings()}")
    meta: dict[str, Any] = {}
    events: list[tuple[float, StreamEvent]] = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if number == 1 and "meta" in record:
                meta = dict(record["meta"])
                continue
            offset, event = float(record["t"]), record["event"]
        except (ValueError, KeyError, TypeError) as exc:
            raise RecordingError(f"{source}:{number}: not a recording line ({exc})") from exc
        if not isinstance(event, dict) or (events and offset < events[-1][0]):
            raise RecordingError(f"{source}:{number}: events must be objects in time order")
        events.append((offset, event))
    if not events:
        raise RecordingError(f"{source}: no events")
    return Recording(meta, events)


class ReplayModel(Model):
    """Replays one recording for every request, ``speed`` times faster than recorded."""

    def __init__(self, recording: Recording, *, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.recording = recording
        self.config: dict[str, Any] = {"speed": speed}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    async def stream(self, messages: Messages, tool_specs: list[ToolSpec] | None = None,
                     system_prompt: str | None = None, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        speed = float(self.config["speed"])
        for offset, event in self.recording.events:
            delay = started + offset / speed - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            yield event

    def structured_output(self, output_model: type, prompt: Messages, system_prompt: str | None = None,
                          **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError("a replayed stream cannot produce structured output")
