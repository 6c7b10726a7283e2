"""Example model streams in the replay format (``agent.llm.replay``), packaged with the agent."""

from __future__ import annotations

import importlib.resources

RECORDINGS = importlib.resources.files("agent.recordings")


def packaged_recordings() -> list[str]:
    return sorted(entry.name.removesuffix(".jsonl") for entry in RECORDINGS.iterdir() if entry.name.endswith(".jsonl"))
