"""One spoken answer as a chain of stages, each in its own module with its guarantees:

    model stream -> text -> chunks -> speech -> the caller's format -> the caller's events
    model_stage     chunk_stage        tts_stage  audio_stage            caller_stage

Stages run side by side and pass typed frames (``frames``) through bounded queues, so speech
starts while the model is still writing. A barge-in or a caller that goes away is an interruption
that travels down the chain: every stage stops its work (the model stream closes, the TTS session
is aborted), and the answer ends once the last stage has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import KW_ONLY, dataclass
from typing import Any

from strands import Agent
from strands.models import Model

from agent.chunker import SentenceChunker
from agent.conversation import (
    MAX_CONVERSATIONS,
    Conversations,
    LastAnswer,
    keep_what_was_said,
    new_conversation,
)
from agent.pipeline.audio_stage import AudioStage
from agent.pipeline.caller_stage import CallerStage
from agent.pipeline.chunk_stage import Chunker, ChunkStage, WholeAnswerChunker
from agent.pipeline.frames import ErrorFrame, FrameQueue, Interrupted, ModelDone
from agent.pipeline.model_stage import ModelStage
from agent.pipeline.stage import Stage
from agent.pipeline.tts_stage import TTSStage
from agent.tts_client import Connect, TTSError, TTSSession
from caller_protocol import VoiceRequest, events

log = logging.getLogger(__name__)

MAX_QUEUED_FRAMES = 256
"""Frames buffered between two stages (a text delta, or 200 ms of audio) before the earlier stage
waits for the later one: a slow caller slows the answer instead of growing memory."""
STOP_TIMEOUT = 5.0
"""Seconds the stages of an abandoned answer may take to stop before they are cancelled outright."""
SHUTDOWN_GRACE = 5.0
"""Seconds the answers in progress may go on once the agent is told to stop (``VoicePipeline.shut_down``)."""


class BargeIn(asyncio.Event):
    """The caller's interruption of an answer: :meth:`interrupt` it, saying (when the caller knows)
    how many milliseconds of the answer's audio it had played."""

    def __init__(self) -> None:
        super().__init__()
        self.played_ms: float | None = None

    def interrupt(self, played_ms: float | None = None) -> None:
        self.played_ms = played_ms
        self.set()


@dataclass
class VoicePipeline:
    """Answers requests; safe to share across concurrent requests (each answer has its own stages).

    ``model_factory`` makes each conversation's model; ``tts_target`` is the TTS container's URL or
    a ``Connect``. ``session_factory`` opens a TTS session on it, ``chunker_factory`` makes
    incremental mode's chunker. ``pipelining=False`` sends each chunk only after the previous one's
    audio has passed (to measure what pipelining is worth). ``max_queued_frames`` bounds each
    queue between two stages."""

    model_factory: Callable[[], Model]
    tts_target: str | Connect
    _: KW_ONLY
    system_prompt: str
    default_voice: str | None = None
    session_factory: Callable[..., TTSSession] = TTSSession
    chunker_factory: Callable[[], Chunker] = SentenceChunker
    pipelining: bool = True
    max_queued_frames: int = MAX_QUEUED_FRAMES
    shutdown_grace: float = SHUTDOWN_GRACE
    max_conversations: int = MAX_CONVERSATIONS

    def __post_init__(self) -> None:
        self.conversations = Conversations(lambda: new_conversation(self.model_factory(), self.system_prompt),
                                           self.max_conversations)
        self._shutdown = _Shutdown()

    @property
    def answers_running(self) -> int:
        return self._shutdown.running

    async def shut_down(self) -> int:
        """Stop answering, for a process about to exit (``agent.entrypoint`` calls it on SIGTERM). A
        new answer is refused with a ``shutting_down`` error event; answers in progress have
        ``shutdown_grace`` seconds to finish, then each stops its stages and ends with a
        ``shutting_down`` error event (the conversation keeps what its caller was sent). Returns once
        no answer is running (at most ``shutdown_grace`` + ``STOP_TIMEOUT`` seconds later): how many
        were ended early."""
        shutdown = self._shutdown
        shutdown.started.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(shutdown.idle.wait(), self.shutdown_grace)
            return 0
        ended = shutdown.running
        shutdown.grace_over.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(shutdown.idle.wait(), STOP_TIMEOUT + 1)
        return ended

    async def answer(self, request: VoiceRequest, session_id: str | None = None,
                     cancel: BargeIn | asyncio.Event | None = None) -> AsyncIterator[dict[str, Any]]:
        """Yield the caller events of one answer, numbered by ``seq``, ending with ``end`` or ``error``.
        Answers with the same ``session_id`` continue one conversation.

        Barge-in: setting ``cancel`` interrupts the stages; the next event after ``cancel`` is set is
        the answer's last (``end`` with ``cancelled`` and ``stop_ms``, the milliseconds until every
        stage had stopped). Closing the generator (the caller went away) stops the stages the same
        way. Either way the conversation keeps what the caller was sent of the answer, so the next
        turn sees what was actually said; a :class:`BargeIn` that says how much of the answer the
        caller played keeps exactly the words heard by then, marked as interrupted. The caller may
        also say it after the answer completed (:meth:`played`)."""
        cancel = cancel or asyncio.Event()
        if self._shutdown.started.is_set():
            yield {**events.error(events.SHUTTING_DOWN, "the agent is shutting down; ask again"), "seq": 0}
            return
        with self._shutdown.answering():
            async with contextlib.aclosing(self._answer(request, session_id, cancel)) as answer:
                async for event in answer:
                    yield event

    async def _answer(self, request: VoiceRequest, session_id: str | None,
                      cancel: asyncio.Event) -> AsyncIterator[dict[str, Any]]:
        async with self.conversations.turn(session_id) as (agent, turn):
            history = len(agent.messages)
            caller = CallerStage(request, session_id, turn)
            completed = False
            try:
                async with contextlib.aclosing(self._events(request, agent, caller, cancel)) as stream:
                    seq = 0
                    async for event in stream:
                        if cancel.is_set() and event["type"] not in events.TERMINAL:
                            continue  # the caller has barged in: nothing but the answer's end reaches it
                        completed = event["type"] == events.END and not event["metrics"]["cancelled"]
                        yield {**event, "seq": seq}
                        seq += 1
            finally:
                if completed:
                    self.conversations.completed(session_id, LastAnswer(turn, history, request.prompt, caller,
                                                                        caller.audio_ms))
                else:
                    played_ms = getattr(cancel, "played_ms", None)
                    if played_ms is None:
                        keep_what_was_said(agent, history, request.prompt, caller.said)
                    else:
                        heard = caller.heard(played_ms)
                        keep_what_was_said(agent, history, request.prompt, heard, interrupted=True)
                        log.info("session %s: the listener stopped turn %d at %.0f ms; the conversation keeps the "
                                 "%d word(s) heard", session_id, turn, played_ms, len(heard.split()))

    async def played(self, session_id: str, played_ms: float) -> bool:
        """The caller stopped playing the session's latest answer at ``played_ms``, after the answer
        had completed (its audio arrives faster than it plays): the conversation keeps only what was
        heard, marked as interrupted. Whether it changed (not when playback had reached the end)."""
        return await self.conversations.cut_last(session_id, played_ms)

    def _stages(self, request: VoiceRequest, agent: Agent, tts: TTSSession) -> list[Stage]:
        chunker = self.chunker_factory() if request.mode == "incremental" else WholeAnswerChunker()
        return [ModelStage(agent, request.prompt), ChunkStage(chunker),
                TTSStage(tts, pipelining=self.pipelining), AudioStage(request.format)]

    async def _events(self, request: VoiceRequest, agent: Agent, caller: CallerStage,
                      cancel: asyncio.Event) -> AsyncIterator[dict[str, Any]]:
        yield caller.start()
        tts = self.session_factory(self.tts_target, voice=request.voice or self.default_voice,
                                    speed=request.speed)
        try:
            await tts.open()
        except TTSError as exc:
            yield caller.failed(events.TTS_FAILED, str(exc))
            return
        chain = _Chain(self._stages(request, agent, tts), self.max_queued_frames)
        stop = _FirstOf(cancel, self._shutdown.grace_over)
        watcher = asyncio.create_task(_interrupt_on(stop, chain), name="voice-pipeline-cancel")
        ended = False
        try:
            while True:
                if stop.is_set() and not chain.output.interrupted.is_set():
                    # Frames already queued come out without a pause, so the watcher may not have run
                    # yet: interrupt now, or the caller stage would count audio the caller is never sent.
                    chain.interrupt()
                try:
                    frame = await chain.output.get()
                except Interrupted:
                    ended = True
                    stop_ms = round((time.perf_counter() - chain.interrupted_at) * 1000, 1)
                    if not cancel.is_set():
                        log.info("answer ended by the shutdown after %.0f s: stages stopped in %.1f ms",
                                 self.shutdown_grace, stop_ms)
                        yield caller.failed(events.SHUTTING_DOWN, f"the agent is shutting down; the answer did not "
                                                                  f"finish within {self.shutdown_grace:g} s")
                        return
                    log.info("answer cancelled by the caller: model stream and TTS session stopped in %.1f ms",
                             stop_ms)
                    yield caller.cancelled(stop_ms)
                    return
                event = caller.event(frame)
                if event is not None:
                    yield event
                if isinstance(frame, (ModelDone, ErrorFrame)):
                    ended = True
                    if isinstance(frame, ModelDone):
                        _log_answer(request, event)
                        await tts.close()  # a complete answer: let the session end cleanly
                    return
        finally:
            watcher.cancel()
            # Shielded: the caller's task may be cancelled again while the answer is being stopped
            # (a WebSocket that closed mid-send); the stages and the session are stopped regardless.
            finishing = asyncio.ensure_future(_finish(chain, tts, abandoned=not ended))
            _FINISHING.add(finishing)  # the loop keeps only a weak reference to a task
            finishing.add_done_callback(_FINISHING.discard)
            await asyncio.shield(finishing)


class _Chain:
    """The stages of one answer, joined by frame queues and running as tasks.

    An interruption enters at the first queue. A running stage stops and passes it on; a stage that
    has already finished (the model stage, once the model has written everything) has nothing to
    stop, so the chain passes it on for it. A stage that failed passes nothing on: its error frame
    is already on its way to the caller, and the interruption only stops the stages before it."""

    def __init__(self, stages: list[Stage], max_queued_frames: int) -> None:
        self.queues = [FrameQueue(max_queued_frames) for _ in range(len(stages) + 1)]
        self.output = self.queues[-1]
        self.interrupted_at = time.perf_counter()
        self._finished = [False] * len(stages)
        self.tasks = [asyncio.create_task(self._run(stage, index), name=f"voice-pipeline-{stage.name}")
                      for index, stage in enumerate(stages)]

    async def _run(self, stage: Stage, index: int) -> None:
        if await stage.run(self.queues[index], self.queues[index + 1]):
            self._finished[index] = True
            self._pass_interruption_on()
        else:
            self.queues[0].interrupt()  # a stage failed: the stages before it stop too
            self._pass_interruption_on()

    def _pass_interruption_on(self) -> None:
        for index, finished in enumerate(self._finished):
            if finished and self.queues[index].interrupted.is_set():
                self.queues[index + 1].interrupt()

    def interrupt(self) -> None:
        self.interrupted_at = time.perf_counter()
        self.queues[0].interrupt()
        self._pass_interruption_on()

    async def stop(self) -> float:
        """Interrupt and wait for every stage; the milliseconds it took."""
        self.interrupt()
        await self.wait()
        return round((time.perf_counter() - self.interrupted_at) * 1000, 1)

    async def wait(self) -> None:
        done, running = await asyncio.wait(self.tasks, timeout=STOP_TIMEOUT)
        for task in running:
            log.warning("stage %s did not stop within %.0f s; cancelling it", task.get_name(), STOP_TIMEOUT)
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


_FINISHING: set[asyncio.Future[None]] = set()


async def _finish(chain: _Chain, tts: TTSSession, *, abandoned: bool) -> None:
    """Stop what is still running of an answer, and release its TTS session."""
    if abandoned:
        await chain.stop()
    await chain.wait()
    await tts.abort()
    if abandoned:
        stop_ms = (time.perf_counter() - chain.interrupted_at) * 1000
        log.info("answer abandoned by the caller: model stream and TTS session stopped in %.1f ms", stop_ms)


async def _interrupt_on(stop: _FirstOf, chain: _Chain) -> None:
    await stop.wait()
    chain.interrupt()


class _FirstOf:
    """Set when either event is."""

    def __init__(self, *events: asyncio.Event) -> None:
        self._events = events

    def is_set(self) -> bool:
        return any(event.is_set() for event in self._events)

    async def wait(self) -> None:
        waits = [asyncio.ensure_future(event.wait()) for event in self._events]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()


class _Shutdown:
    """The answers running, and how far the agent's shutdown has come."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        """No new answer is taken."""
        self.grace_over = asyncio.Event()
        """Answers still running end now."""
        self.idle = asyncio.Event()
        self.idle.set()
        self.running = 0

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        self.running += 1
        self.idle.clear()
        try:
            yield
        finally:
            self.running -= 1
            if self.running == 0:
                self.idle.set()


def _log_answer(request: VoiceRequest, end: dict[str, Any] | None) -> None:
    if end is not None:
        metrics = end["metrics"]
        log.info("answer finished: %s, %s, %d sentence(s), first audio %s ms, total %s ms, %.1f s of audio",
                 request.mode, request.format, metrics["sentences"], metrics["time_to_first_audio_ms"],
                 metrics["total_ms"], metrics["audio_seconds"])
