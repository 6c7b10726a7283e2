"""Record any Strands model's stream into the replay format (see ``agent.replay_model``)."""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path
from typing import Any

from strands.models import Model


async def record(model: Model, prompt: str, out: Path, *, system_prompt: str | None = None,
                 model_id: str | None = None) -> int:
    """Ask ``model`` once and write its stream events with their time offsets; returns the count."""
    messages: Any = [{"role": "user", "content": [{"text": prompt}]}]
    started = time.perf_counter()
    lines = []
    async for event in model.stream(messages, system_prompt=system_prompt):
        lines.append({"t": round(time.perf_counter() - started, 4), "event": event})
    meta = {"prompt": prompt, "model_id": model_id, "system_prompt": system_prompt,
            "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for line in [{"meta": meta}, *lines]:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(lines)
