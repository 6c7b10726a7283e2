"""What every stage of an answer guarantees, written once.

A stage reads frames from its inbox and writes frames to its outbox (both bounded
:class:`~agent.pipeline.frames.FrameQueue`). :meth:`Stage.run` drives one stage for one answer:

- **End**: the stage's :meth:`Stage.process` returns after passing on its input's terminal frame
  (``ModelDone`` or ``ErrorFrame``); frames keep their order.
- **Failure**: an exception from :meth:`Stage.process` becomes an ``ErrorFrame`` (its code from
  :meth:`Stage.error`), sent on as the stage's last frame; the pipeline then interrupts the stages
  before it.
- **Interruption**: when the inbox is interrupted, the stage's work is cancelled wherever it waits
  (its inbox, its outbox, a model stream, a TTS stream), :meth:`Stage.stop` releases what it holds
  (cancel-safe: called once, whatever state the work was in), and the interruption is passed on to
  the outbox. So an interruption reaches the last stage only once every stage before it has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agent.pipeline.frames import ErrorFrame, FrameQueue
from agent.tts_client import TTSError
from caller_protocol import events
from tts_protocol import UNKNOWN_VOICE

log = logging.getLogger(__name__)


class Stage:
    name = "stage"

    async def process(self, inbox: FrameQueue, outbox: FrameQueue) -> None:
        raise NotImplementedError

    def error(self, exc: Exception) -> ErrorFrame:
        """The frame that reports ``exc`` to the caller: a TTS failure is ``tts_failed`` (an unknown
        voice, ``invalid_request``), anything else ``model_failed``."""
        if isinstance(exc, TTSError):
            return ErrorFrame(events.INVALID_REQUEST if exc.code == UNKNOWN_VOICE else events.TTS_FAILED, str(exc))
        return ErrorFrame(events.MODEL_FAILED, str(exc) or type(exc).__name__)

    async def stop(self) -> None:
        """Release what the stage holds after an interruption; nothing by default."""

    async def run(self, inbox: FrameQueue, outbox: FrameQueue) -> bool:
        """Process one answer's frames; returns False when the stage failed."""
        work = asyncio.create_task(self.process(inbox, outbox), name=f"stage-{self.name}")
        interrupted = asyncio.create_task(inbox.interrupted.wait(), name=f"stage-{self.name}-interrupt")
        try:
            await asyncio.wait({work, interrupted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (interrupted, work):
                if not task.done():
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if inbox.interrupted.is_set():
            await self.stop()
            outbox.interrupt()
            return True
        if work.cancelled() or work.exception() is None:
            return True
        exc = work.exception()
        assert isinstance(exc, Exception)
        frame = self.error(exc)
        log.error("%s stage failed: %s: %s", self.name, frame.code, frame.message,
                  exc_info=exc if frame.code == events.MODEL_FAILED else None)
        await outbox.put(frame)
        return False
