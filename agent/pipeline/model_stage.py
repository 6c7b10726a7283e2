"""Model stream -> text frames: the Strands agent's answer, delta by delta.

Guarantees: every text delta the model streams becomes one ``TextFrame``, in order, then one
``ModelDone``; a model that stops at its token limit still ends with ``ModelDone`` (``truncated``),
as what it wrote is still spoken. The stage has no input but an interruption:
on an interruption the model's stream is closed where it waits (cancel-safe: Strands' stream, and
the local model's worker request, are stopped). A model failure ends the answer with
``model_failed``.
"""

from __future__ import annotations

from strands import Agent
from strands.types.exceptions import MaxTokensReachedException

from agent.pipeline.frames import FrameQueue, ModelDone, TextFrame
from agent.pipeline.stage import Stage


class ModelStage(Stage):
    name = "model"

    def __init__(self, agent: Agent, prompt: str) -> None:
        self._agent = agent
        self._prompt = prompt

    async def process(self, inbox: FrameQueue, outbox: FrameQueue) -> None:
        truncated = False
        try:
            async for item in self._agent.stream_async(self._prompt):
                delta = item.get("data")
                if isinstance(delta, str) and delta:
                    await outbox.put(TextFrame(delta))
        except MaxTokensReachedException:
            truncated = True
        await outbox.put(ModelDone(truncated))
