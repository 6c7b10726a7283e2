"""Record a Strands model's stream into the replay format (see ``agent.llm.replay``): once, for a
prompt (``record``), or for every answer an agent gives (``RecordingModel``, switched on by
``VOICE_AGENT_RECORD_DIR``), so that a live answer can be replayed at its own pace."""

from __future__ import annotations

import datetime
import itertools
import json
import time
from collections.abc import AsyncGenerator, AsyncIterable
from pathlib import Path
from typing import Any

from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

_numbers = itertools.count(1)


async def record(model: Model, prompt: str, out: Path, *, system_prompt: str | None = None,
                 model_id: str | None = None) -> int:
    """Ask ``model`` once and write its stream events with their time offsets; returns the count."""
    messages: Any = [{"role": "user", "content": [{"text": prompt}]}]
    lines = [line async for line in _timed(model.stream(messages, system_prompt=system_prompt))]
    write_recording(out, lines, prompt=prompt, system_prompt=system_prompt, model_id=model_id)
    return len(lines)


async def _timed(stream: AsyncIterable[StreamEvent]) -> AsyncIterable[dict[str, Any]]:
    started = time.perf_counter()
    async for event in stream:
        yield {"t": round(time.perf_counter() - started, 4), "event": event}


def write_recording(out: Path, lines: list[dict[str, Any]], *, prompt: str | None, system_prompt: str | None,
                    model_id: str | None) -> None:
    meta = {"prompt": prompt, "model_id": model_id, "system_prompt": system_prompt,
            "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with partial.open("w", encoding="utf-8") as handle:
        for line in [{"meta": meta}, *lines]:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    partial.replace(out)  # a reader never sees half a recording


class RecordingModel(Model):
    """Wraps a model; every complete stream it gives is also written to ``directory`` as
    ``<UTC time>-<n>.jsonl``. A stream that ends early (barge-in, an error) is not written: a
    recording is always a whole answer."""

    def __init__(self, inner: Model, directory: Path, *, model_id: str | None = None) -> None:
        self.inner = inner
        self.directory = directory
        self.model_id = model_id

    def update_config(self, **model_config: Any) -> None:
        self.inner.update_config(**model_config)

    def get_config(self) -> Any:
        return self.inner.get_config()

    def __getattr__(self, name: str) -> Any:  # warm_up and other extras of the inner model
        return getattr(self.inner, name)

    async def stream(self, messages: Messages, tool_specs: list[ToolSpec] | None = None,
                     system_prompt: str | None = None, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        lines = []
        async for line in _timed(self.inner.stream(messages, tool_specs, system_prompt, **kwargs)):
            lines.append(line)
            yield line["event"]
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
        write_recording(self.directory / f"{stamp}-{next(_numbers)}.jsonl", lines, prompt=_last_prompt(messages),
                        system_prompt=system_prompt, model_id=self.model_id)

    def structured_output(self, output_model: type, prompt: Messages, system_prompt: str | None = None,
                          **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        return self.inner.structured_output(output_model, prompt, system_prompt, **kwargs)


def _last_prompt(messages: Messages) -> str | None:
    for message in reversed(messages):
        if message["role"] == "user":
            return "".join(block.get("text", "") for block in message["content"] if isinstance(block, dict))
    return None
