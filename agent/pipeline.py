"""One spoken answer: model stream -> sentence chunker -> TTS session -> caller events.

Two stages run side by side so that speech starts while the model is still writing:

- the *text stage* reads the Strands agent's stream, emits ``text`` events, and in incremental
  mode sends each sentence to the TTS session the moment the chunker completes it (batch mode
  sends the whole answer once the model has finished);
- the *audio stage* reads the sentences' audio streams in order and emits ``audio`` events.

Both feed one bounded queue of caller events. If the caller goes away (the generator is closed),
both stages are cancelled and the TTS session is aborted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from strands import Agent
from strands.agent.conversation_manager import SlidingWindowConversationManager
from strands.models import Model
from strands.types.exceptions import MaxTokensReachedException

import tts_protocol
from agent import events
from agent.audio_encoding import DEFAULT_FORMAT, FORMATS, StreamEncoder
from agent.chunker import SentenceChunker
from agent.speech_text import SpeechText
from agent.tts_client import Connect, TTSError, TTSSession

log = logging.getLogger(__name__)

MODES = ("incremental", "batch")
MAX_PROMPT_CHARS = 4_000
"""Longest prompt accepted; a spoken question is far shorter."""
VOICE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""What a voice name looks like (Kokoro's are like ``af_heart``); whether the TTS server has the
voice is its answer to the first sentence: ``invalid_request``, before any audio."""
MAX_QUEUED_EVENTS = 256
"""Caller events buffered ahead of a slow caller before the stages wait for it."""
MAX_PENDING_SENTENCES = 64
"""Sentences sent to TTS whose audio has not been relayed yet."""


class RequestError(ValueError):
    pass


@dataclass(frozen=True)
class VoiceRequest:
    prompt: str
    mode: str = "incremental"
    voice: str | None = None
    speed: float = 1.0
    format: str = DEFAULT_FORMAT

    @classmethod
    def from_payload(cls, payload: Any) -> VoiceRequest:
        """Validate an invocation payload; raises :class:`RequestError` with a clear message."""
        if not isinstance(payload, dict):
            raise RequestError("the payload must be a JSON object")
        unknown = set(payload) - {"prompt", "mode", "voice", "speed", "format"}
        if unknown:
            raise RequestError(f"unknown fields: {', '.join(sorted(unknown))}")
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise RequestError("prompt must be a non-empty string")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise RequestError(f"prompt has {len(prompt)} characters; at most {MAX_PROMPT_CHARS}")
        mode = payload.get("mode", "incremental")
        if mode not in MODES:
            raise RequestError(f"mode must be one of {', '.join(MODES)}")
        voice = payload.get("voice")
        if voice is not None and (not isinstance(voice, str) or not VOICE_NAME.fullmatch(voice)):
            raise RequestError("voice must be a voice name: 1 to 64 letters, digits, '_', '-' or '.'")
        speed = payload.get("speed", 1.0)
        if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not (
                tts_protocol.MIN_SPEED <= speed <= tts_protocol.MAX_SPEED):
            raise RequestError(f"speed must be a number from {tts_protocol.MIN_SPEED} to {tts_protocol.MAX_SPEED}")
        fmt = payload.get("format", DEFAULT_FORMAT)
        if fmt not in FORMATS:
            raise RequestError(f"format must be one of {', '.join(FORMATS)}")
        return cls(prompt=prompt, mode=mode, voice=voice, speed=float(speed), format=fmt)


class _Clock:
    """Milliseconds since the request arrived, and the first time each milestone was reached."""

    def __init__(self) -> None:
        self._started = time.perf_counter()
        self.marks: dict[str, float] = {}

    def now_ms(self) -> float:
        return round((time.perf_counter() - self._started) * 1000, 1)

    def mark(self, name: str) -> None:
        self.marks.setdefault(name, self.now_ms())


_DONE = object()

MAX_SESSIONS = 256
"""Conversations kept in memory; beyond this the least recently used one is forgotten."""
WINDOW_MESSAGES = 20
"""Messages of a conversation the model sees: ten turns, enough for a spoken exchange."""


class Conversations:
    """One Strands agent per AgentCore session id, so the turns of a session share conversation
    memory (a sliding window of ``WINDOW_MESSAGES``). Turns of one session take turns: a second
    request waits for the first to finish. A request without a session id gets a fresh agent."""

    def __init__(self, make_agent: Callable[[], Agent], max_sessions: int = MAX_SESSIONS) -> None:
        self._make_agent = make_agent
        self._max_sessions = max_sessions
        self._sessions: OrderedDict[str, tuple[Agent, asyncio.Lock, list[int]]] = OrderedDict()

    @contextlib.asynccontextmanager
    async def turn(self, session_id: str | None) -> AsyncIterator[tuple[Agent, int]]:
        """The session's agent and this turn's number (1 for the first), held for the turn."""
        if session_id is None:
            yield self._make_agent(), 1
            return
        if session_id not in self._sessions:
            self._sessions[session_id] = (self._make_agent(), asyncio.Lock(), [0])
            while len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session_id)
        agent, lock, turns = self._sessions[session_id]
        async with lock:
            turns[0] += 1
            yield agent, turns[0]


class VoicePipeline:
    """Answers one request at a time per call to :meth:`answer`; safe to share across requests."""

    def __init__(self, model_factory: Callable[[], Model], tts_target: str | Connect, *, system_prompt: str,
                 default_voice: str | None = None, session_factory: Callable[..., TTSSession] = TTSSession,
                 chunker_factory: Callable[[], SentenceChunker] = SentenceChunker, pipelining: bool = True) -> None:
        """``pipelining=False`` sends each sentence only after the previous one's audio was relayed,
        as a sequential implementation would; it exists to measure what pipelining contributes."""
        self._model_factory = model_factory
        self._tts_target = tts_target
        self._system_prompt = system_prompt
        self._default_voice = default_voice
        self._session_factory = session_factory
        self._chunker_factory = chunker_factory
        self._pipelining = pipelining
        self.conversations = Conversations(lambda: Agent(
            model=self._model_factory(), system_prompt=self._system_prompt, callback_handler=None,
            conversation_manager=SlidingWindowConversationManager(window_size=WINDOW_MESSAGES)))

    async def answer(self, request: VoiceRequest, session_id: str | None = None,
                     cancel: asyncio.Event | None = None) -> AsyncIterator[dict[str, Any]]:
        """Yield the caller events of one answer, numbered by ``seq``, ending with ``end`` or ``error``.
        Answers with the same ``session_id`` continue one conversation.

        Barge-in: setting ``cancel`` stops the model stream and the TTS session, drops the events
        not yet yielded (the next event after ``cancel`` is set is the answer's last), and ends the
        answer with ``end`` (``cancelled``, ``stop_ms``). Closing the generator (the caller went
        away) stops them the same way. Either way the conversation keeps
        what the caller was sent of the answer, so the next turn sees what was actually said."""
        seq = 0
        sentences: dict[int, str] = {}
        sent_up_to = -1  # the last sentence whose audio the caller was sent (some of)
        completed = False
        cancel = cancel or asyncio.Event()
        async with self.conversations.turn(session_id) as (agent, turn):
            history = len(agent.messages)
            try:
                # aclosing: when the caller goes away, the stages stop now, not when the garbage
                # collector finalises the inner generator.
                async with contextlib.aclosing(self._events(request, agent, session_id, turn, cancel)) as stream:
                    async for event in stream:
                        if cancel.is_set() and event["type"] not in events.TERMINAL:
                            continue  # the caller has barged in: nothing but the answer's end reaches it
                        if event["type"] == events.SENTENCE:
                            sentences[event["index"]] = event["text"]
                        elif event["type"] == events.AUDIO:
                            sent_up_to = max(sent_up_to, event["index"])
                        elif event["type"] == events.END:
                            completed = not event["metrics"]["cancelled"]
                        yield {**event, "seq": seq}
                        seq += 1
            finally:
                if not completed:
                    said = " ".join(text for index, text in sorted(sentences.items()) if index <= sent_up_to)
                    _keep_what_was_said(agent, history, request.prompt, said)

    async def _events(self, request: VoiceRequest, agent: Agent, session_id: str | None,
                      turn: int, cancel: asyncio.Event) -> AsyncIterator[dict[str, Any]]:
        clock = _Clock()
        output: asyncio.Queue[Any] = asyncio.Queue(MAX_QUEUED_EVENTS)
        pending: asyncio.Queue[Any] = asyncio.Queue(MAX_PENDING_SENTENCES)
        totals = {"sentences": 0, "audio_bytes": 0, "pcm_bytes": 0, "truncated": 0}
        speech_text = SpeechText()
        yield events.start(request.mode, tts_protocol.SAMPLE_RATE, request.format, session_id, turn)
        try:
            tts = self._session_factory(self._tts_target, voice=request.voice or self._default_voice,
                                        speed=request.speed)
            await tts.open()
        except TTSError as exc:
            yield events.error(events.TTS_FAILED, str(exc))
            return

        relayed = asyncio.Condition()
        relayed_count = [0]

        ready_ms: dict[int, float] = {}  # when each chunk's text was ready to speak
        first_chunk: dict[str, Any] = {}  # the chunk whose audio came first, and its inference time

        async def send(written: str) -> None:
            index = totals["sentences"]
            totals["sentences"] += 1
            speech = speech_text(written)
            clock.mark("first_sentence")
            ready_ms[index] = clock.now_ms()
            if not self._pipelining:
                async with relayed:
                    await relayed.wait_for(lambda: relayed_count[0] >= index)
            stream = await tts.synthesize(speech) if speech else None
            await output.put(events.sentence(index, written, speech))
            await pending.put((index, stream))

        async def text_stage() -> None:
            chunker = self._chunker_factory()
            answer: list[str] = []
            try:
                async for item in agent.stream_async(request.prompt):
                    delta = item.get("data")
                    if not isinstance(delta, str) or not delta:
                        continue
                    clock.mark("first_text")
                    answer.append(delta)
                    await output.put(events.text(delta))
                    if request.mode == "incremental":
                        for sentence in chunker.feed(delta):
                            await send(sentence)
            except MaxTokensReachedException:
                # A spoken answer cut at the token limit is still spoken, up to where it stopped.
                totals["truncated"] = 1
            clock.mark("model_done")
            remaining = chunker.flush() if request.mode == "incremental" else ["".join(answer).strip()]
            for sentence in remaining:
                if sentence:
                    await send(sentence)
            await pending.put(_DONE)

        encoder = StreamEncoder(request.format)

        async def relay(index: int, data: bytes) -> None:
            if data:
                clock.mark("first_audio")
                totals["audio_bytes"] += len(data)
                await output.put(events.audio(index, data, tts_protocol.SAMPLE_RATE))

        async def audio_stage() -> None:
            index = 0
            while (item := await pending.get()) is not _DONE:
                index, stream = item
                if stream is not None:
                    if stream.sample_rate != encoder.sample_rate:
                        raise TTSError(f"the TTS server sent {stream.sample_rate} Hz audio; the agent expects "
                                       f"{encoder.sample_rate} Hz")
                    async for chunk in stream:
                        totals["pcm_bytes"] += len(chunk)
                        first_chunk.setdefault("index", index)
                        await relay(index, encoder.encode(chunk))
                    if first_chunk.get("index") == index:
                        first_chunk.setdefault("inference_ms", stream.stats.get("first_inference_ms"))
                async with relayed:
                    relayed_count[0] += 1
                    relayed.notify_all()
            # One stream per answer: the encoder's last frames and the container's end come once.
            await relay(index, encoder.finish() if totals["pcm_bytes"] else b"")

        async def run_stages() -> None:
            try:
                async with asyncio.TaskGroup() as group:
                    group.create_task(text_stage())
                    group.create_task(audio_stage())
            except* TTSError as failure:
                exc = failure.exceptions[0]
                code = events.INVALID_REQUEST if exc.code == tts_protocol.UNKNOWN_VOICE else events.TTS_FAILED
                await output.put(events.error(code, str(exc)))
            except* Exception as failure:
                log.error("answer failed", exc_info=failure.exceptions[0])
                await output.put(events.error(events.MODEL_FAILED, str(failure.exceptions[0])))
            else:
                metrics = self._metrics(clock, totals)
                metrics.update(_overhead(metrics["time_to_first_audio_ms"], ready_ms.get(first_chunk.get("index", -1)),
                                         first_chunk.get("inference_ms")))
                log.info("answer finished: %s, %s, %d sentence(s), first audio %s ms, total %s ms, %.1f s of audio",
                         request.mode, request.format, metrics["sentences"], metrics["time_to_first_audio_ms"],
                         metrics["total_ms"], metrics["audio_seconds"])
                await output.put(events.end({**metrics, "cancelled": False, "stop_ms": None}))
            await output.put(_DONE)

        async def stop() -> float:
            """Stop the model stream and the TTS session; the milliseconds it took."""
            started = time.perf_counter()
            if not runner.done():
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await runner
            await tts.abort()
            return round((time.perf_counter() - started) * 1000, 1)

        async def barge_in() -> None:
            await cancel.wait()
            if runner.done():
                return  # the answer had already ended
            stop_ms = await stop()
            while not output.empty():  # what the caller has not been sent is dropped
                output.get_nowait()
            log.info("answer cancelled by the caller: model stream and TTS session stopped in %.1f ms", stop_ms)
            await output.put(events.end({**self._metrics(clock, totals), **_overhead(None, None, None),
                                         "cancelled": True, "stop_ms": stop_ms}))
            await output.put(_DONE)

        runner = asyncio.create_task(run_stages(), name="voice-pipeline")
        watcher = asyncio.create_task(barge_in(), name="voice-pipeline-cancel")
        finished = False
        try:
            last = None
            while (event := await output.get()) is not _DONE:
                last = event
                yield event
            finished = True
            if not runner.cancelled():
                await runner
                if last is not None and last["type"] == events.END:
                    await tts.close()  # a complete answer: let the session end cleanly
                # after an error the finally below aborts the session: nothing in flight is awaited
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            if not finished:
                was_running = not runner.done()
                stop_ms = await stop()
                if was_running:
                    log.info("answer abandoned by the caller: model stream and TTS session stopped in %.1f ms",
                             stop_ms)
            await tts.abort()
            encoder.close()

    @staticmethod
    def _metrics(clock: _Clock, totals: dict[str, int]) -> dict[str, Any]:
        marks = clock.marks
        return {
            "time_to_first_text_ms": marks.get("first_text"),
            "time_to_first_audio_ms": marks.get("first_audio"),
            "first_sentence_ms": marks.get("first_sentence"),
            "model_ms": marks.get("model_done"),
            "total_ms": clock.now_ms(),
            "sentences": totals["sentences"],
            "audio_bytes": totals["audio_bytes"],
            "audio_seconds": round(tts_protocol.pcm16_seconds(totals["pcm_bytes"]), 3),
            "truncated": bool(totals["truncated"]),
        }


def _overhead(first_audio_ms: float | None, ready_ms: float | None, inference_ms: float | None) -> dict[str, Any]:
    """How far first audio was from its physical limit: the chunk's text being ready plus the model's
    inference for it. What remains is the pipeline's own cost (speech text, session, G2P, queues,
    framing, encoding)."""
    overhead = None
    if first_audio_ms is not None and ready_ms is not None and inference_ms is not None:
        overhead = round(first_audio_ms - ready_ms - inference_ms, 1)
    return {"first_chunk_ready_ms": ready_ms, "first_chunk_inference_ms": inference_ms,
            "pipeline_overhead_ms": overhead}


def _keep_what_was_said(agent: Agent, history: int, prompt: str, said: str) -> None:
    """After an answer that did not complete (cancelled, abandoned, failed), leave the conversation
    as the caller experienced it: the question and what was sent of the answer, or, when nothing
    was, no trace of the turn. Strands leaves the question without an answer when its stream is
    cancelled, and Bedrock refuses a conversation whose roles do not alternate."""
    del agent.messages[history:]
    if said:
        agent.messages.append({"role": "user", "content": [{"text": prompt}]})
        agent.messages.append({"role": "assistant", "content": [{"text": said}]})
