"""The TTS container's ASGI app, following the SageMaker serving contract on port 8080.

- ``GET /ping``: 200 once the model is loaded and a warm-up synthesis produced audio, 503 before.
- ``POST /invocations``: one JSON request (the ``synthesize`` message of ``tts_protocol``), a WAV back.
- WebSocket ``/invocations-bidirectional-stream``: a session speaking ``tts_protocol``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

import tts_protocol as protocol
from tts_server.engine import DEFAULT_VOICE, KokoroEngine, UnknownVoiceError

log = logging.getLogger(__name__)

T = TypeVar("T")

BIDI_PATH = "/invocations-bidirectional-stream"

MAX_FRAME_BYTES = 1024 * 1024
"""Largest WebSocket frame the server reads (the uvicorn ``ws_max_size``). A frame above it closes
the connection with code 1009 before it is buffered; a frame between ``MAX_MESSAGE_BYTES`` and this
gets a ``message_too_large`` error and the session goes on."""


@dataclass(frozen=True)
class ServerSettings:
    voices_path: Path | None = None
    """A Kokoro voices file (``.npz``/``voices-v1.0.bin``); ``None`` uses the packaged voices."""
    default_voice: str = DEFAULT_VOICE
    threads: int | None = None
    """ONNX Runtime intra-op threads; ``None`` uses every core."""
    max_queued_requests: int = 64
    """Synthesize requests one session may have waiting. A sentence-chunked answer rarely has more
    than a few dozen; beyond this the request gets a ``queue_full`` error instead of growing memory."""
    frame_samples: int = 4_800
    """Samples per binary audio frame (200 ms, 9.6 KB). Smaller frames let ``cancel`` cut audio
    sooner; larger ones cost fewer messages."""
    max_buffered_frames: int = 256
    """Frames (and messages) synthesized ahead of what the client has taken: ~51 s of audio and
    2.5 MB per session at most. When the client reads slower, synthesis for it waits."""
    max_sessions: int = 16
    """Sessions served at once. Inference is serialised, so each session beyond the few a machine
    can keep real-time only adds waiting (4 sessions reach RTF ~1 on 2 cores); a session over the
    limit gets an ``overloaded`` error and close code 1013 instead of queueing without bound."""
    idle_timeout: float = 300.0
    """Seconds a session may go without a client message while nothing is pending; then it is
    closed (code 1000, reason "idle timeout") so abandoned sessions do not hold resources."""


class TTSService:
    """The engine, loaded in the background, and the one thread that runs inference.

    Inference is serialised on a single worker thread: each call gets every core, which on a small
    CPU instance gives a lower time to first audio than running calls side by side.
    """

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.engine: KokoroEngine | None = None
        self.failure: str | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kokoro")
        self._request_ids = itertools.count(1)
        self.sessions = 0
        """Bidirectional sessions open now."""

    def load(self) -> None:
        try:
            engine = KokoroEngine.load(self.settings.voices_path, threads=self.settings.threads,
                                       default_voice=self.settings.default_voice)
            engine.warm_up()
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            log.exception("engine failed to load")
            return
        self.engine = engine

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def next_request_id(self) -> str:
        return f"req-{next(self._request_ids)}"

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


_CLOSE = object()


class _Job:
    """One synthesize request (or a refusal to answer in its turn) on its way through a session."""

    def __init__(self, request: protocol.Synthesize | protocol.ProtocolError) -> None:
        self.request = request
        self.request_id = request.request_id
        self.cancelled = False
        self.answered = False


def _timed(function: Callable[..., T], *args: Any) -> tuple[T, float]:
    """Run ``function`` and measure it where it runs (the inference thread): the model's own time,
    without the wait for the thread."""
    started = time.perf_counter()
    result = function(*args)
    return result, (time.perf_counter() - started) * 1000


class SynthesisSession:
    """One client's WebSocket session: a receive loop, a synthesizer and a sender.

    The synthesizer works through the requests in order and hands their messages and audio frames
    to the sender through a bounded queue, so synthesis of request n+1 overlaps with sending the
    audio of request n. Every synthesize request gets exactly one terminal message,
    ``synthesis_complete`` or ``error``, in the order the requests arrived; a refused request (bad
    speed, unknown voice) is answered in its turn too. Two errors are sent at once instead:
    ``queue_full``, and an error for a message that names no request. After any error the session
    keeps going. ``cancel`` marks every unanswered request cancelled: the sender stops their audio
    before its next frame and answers each with a ``cancelled`` error.
    """

    def __init__(self, websocket: WebSocket, service: TTSService) -> None:
        self._websocket = websocket
        self._service = service
        self._settings = service.settings
        # One slot more than the limit, for the close marker.
        self._jobs: asyncio.Queue[Any] = asyncio.Queue(self._settings.max_queued_requests + 1)
        self._outgoing: asyncio.Queue[Any] = asyncio.Queue(self._settings.max_buffered_frames)
        self._unanswered: list[_Job] = []
        self._send_lock = asyncio.Lock()

    async def run(self) -> None:
        await self._websocket.accept()
        synthesizer = asyncio.create_task(self._synthesize_jobs())
        sender = asyncio.create_task(self._send_outgoing())
        try:
            if await self._receive():
                await synthesizer
                await sender
                await self._websocket.close()
        except WebSocketDisconnect:
            pass
        finally:
            for task in (synthesizer, sender):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect):
                    await task

    async def _receive(self) -> bool:
        """Read client messages until ``close`` (returns True), disconnect or idle timeout."""
        while True:
            try:
                message = await asyncio.wait_for(self._websocket.receive(), self._settings.idle_timeout)
            except TimeoutError:
                if self._unanswered:
                    continue  # the client is waiting for audio, not idle
                log.info("closing a session idle for %.0f s", self._settings.idle_timeout)
                await self._websocket.close(code=1000, reason="idle timeout")
                return False
            if message["type"] == "websocket.disconnect":
                return False
            payload = message.get("text")
            if payload is None:
                payload = message.get("bytes") or b""
            try:
                parsed = protocol.parse_client_message(payload, default_request_id=self._service.next_request_id())
            except protocol.ProtocolError as exc:
                if exc.request_id is None:
                    await self._send_text(protocol.encode_error(None, exc.code, exc.message))
                    continue
                parsed = exc  # a refused request is answered in its turn, like any other
            if isinstance(parsed, protocol.Close):
                self._jobs.put_nowait(_CLOSE)
                return True
            if isinstance(parsed, protocol.Cancel):
                for job in self._unanswered:
                    job.cancelled = True
            elif self._jobs.qsize() >= self._settings.max_queued_requests:
                await self._send_text(protocol.encode_error(
                    parsed.request_id, protocol.QUEUE_FULL,
                    f"{self._settings.max_queued_requests} requests are already waiting"))
            else:
                job = _Job(parsed)
                self._unanswered.append(job)
                self._jobs.put_nowait(job)

    async def _synthesize_jobs(self) -> None:
        while (job := await self._jobs.get()) is not _CLOSE:
            try:
                await self._synthesize(job)
            except Exception as exc:
                log.exception("synthesis failed for %s", job.request_id)
                await self._finish(job, protocol.encode_error(job.request_id, protocol.SYNTHESIS_FAILED,
                                                              f"{type(exc).__name__}: {exc}"))
        await self._outgoing.put(_CLOSE)

    async def _synthesize(self, job: _Job) -> None:
        """Queue the job's messages and frames for the sender; its terminal message comes last."""
        request = job.request
        if isinstance(request, protocol.ProtocolError):
            await self._finish(job, protocol.encode_error(job.request_id, request.code, request.message))
            return
        if job.cancelled:
            await self._finish(job, None)  # the sender answers it as cancelled
            return
        engine = self._service.engine
        assert engine is not None, "sessions are accepted only once the engine is ready"
        received = time.perf_counter()
        try:
            voice = engine.resolve_voice(request.voice)
        except UnknownVoiceError as exc:
            await self._finish(job, protocol.encode_error(job.request_id, protocol.UNKNOWN_VOICE, str(exc)))
            return
        pieces = await self._service.run(engine.phonemize, request.text)
        if not pieces:
            await self._finish(job, protocol.encode_error(job.request_id, protocol.EMPTY_TEXT,
                                                          "the text has nothing to speak"))
            return
        await self._outgoing.put((job, protocol.encode_synthesis_start(job.request_id), False))
        frame_bytes = self._settings.frame_samples * protocol.SAMPLE_WIDTH
        audio_bytes = 0
        first_audio_ms: float | None = None
        inference_ms: list[float] = []
        for piece in pieces:
            if job.cancelled:
                break
            pcm, took_ms = await self._service.run(_timed, engine.infer, piece, voice, request.speed)
            inference_ms.append(took_ms)
            if first_audio_ms is None:
                first_audio_ms = (time.perf_counter() - received) * 1000
            for offset in range(0, len(pcm), frame_bytes):
                frame = pcm[offset:offset + frame_bytes]
                await self._outgoing.put((job, frame, False))
                audio_bytes += len(frame)
        await self._finish(job, protocol.encode_synthesis_complete(
            job.request_id,
            audio_bytes=audio_bytes,
            audio_seconds=round(protocol.pcm16_seconds(audio_bytes), 3),
            pieces=len(pieces),
            phonemes=sum(len(piece) for piece in pieces),
            first_audio_ms=round(first_audio_ms or 0.0, 1),
            first_inference_ms=round(inference_ms[0] if inference_ms else 0.0, 1),
            inference_ms=round(sum(inference_ms), 1),
            synthesis_ms=round((time.perf_counter() - received) * 1000, 1),
        ))

    async def _finish(self, job: _Job, terminal: str | None) -> None:
        """Queue the job's terminal message (``None``: answer it as cancelled)."""
        await self._outgoing.put((job, terminal, True))

    async def _send_outgoing(self) -> None:
        """Send queued messages and frames; a job's terminal message is the last text it gets."""
        while (item := await self._outgoing.get()) is not _CLOSE:
            job, payload, terminal = item
            if job.answered:
                continue
            if job.cancelled or payload is None:
                await self._answer(job, protocol.encode_error(job.request_id, protocol.CANCELLED, "cancelled"))
            elif terminal:
                await self._answer(job, payload)
            elif isinstance(payload, bytes):
                async with self._send_lock:
                    await self._websocket.send_bytes(payload)
            else:
                await self._send_text(payload)

    async def _answer(self, job: _Job, terminal: str) -> None:
        job.answered = True
        self._unanswered.remove(job)
        await self._send_text(terminal)

    async def _send_text(self, text: str) -> None:
        async with self._send_lock:
            await self._websocket.send_text(text)


def create_app(settings: ServerSettings | None = None) -> Starlette:
    service = TTSService(settings or ServerSettings())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        # Loading runs in the background so /ping can answer "loading" meanwhile.
        loader = asyncio.create_task(asyncio.to_thread(service.load))
        try:
            yield
        finally:
            loader.cancel()
            service.shutdown()

    async def ping(request: Request) -> Response:
        if service.engine is not None:
            return JSONResponse({"status": "Healthy", "provider": service.engine.provider})
        if service.failure is not None:
            return JSONResponse({"status": "Failed", "error": service.failure}, status_code=503)
        return JSONResponse({"status": "Loading"}, status_code=503)

    async def invocations(request: Request) -> Response:
        engine = service.engine
        if engine is None:
            return JSONResponse({"code": "not_ready", "message": "the model is still loading"}, status_code=503)
        body = await _read_limited(request, protocol.MAX_MESSAGE_BYTES)
        if body is None:
            return JSONResponse({"code": protocol.MESSAGE_TOO_LARGE,
                                 "message": f"body exceeds {protocol.MAX_MESSAGE_BYTES} bytes"}, status_code=413)
        try:
            parsed = protocol.parse_client_message(body, default_request_id=service.next_request_id())
            if not isinstance(parsed, protocol.Synthesize):
                raise protocol.ProtocolError(protocol.BAD_REQUEST, "POST /invocations takes a synthesize request")
            voice = engine.resolve_voice(parsed.voice)
        except protocol.ProtocolError as exc:
            return JSONResponse({"code": exc.code, "message": exc.message}, status_code=400)
        except UnknownVoiceError as exc:
            return JSONResponse({"code": protocol.UNKNOWN_VOICE, "message": str(exc)}, status_code=400)
        pieces = await service.run(engine.phonemize, parsed.text)
        if not pieces:
            return JSONResponse({"code": protocol.EMPTY_TEXT, "message": "the text has nothing to speak"},
                                status_code=400)
        pcm = b"".join([await service.run(engine.infer, piece, voice, parsed.speed) for piece in pieces])
        return Response(protocol.pcm16_to_wav(pcm), media_type="audio/wav")

    async def bidirectional_stream(websocket: WebSocket) -> None:
        if service.engine is None:
            # 1013 "try again later": the model is not loaded yet.
            await websocket.close(code=1013)
            return
        if service.sessions >= service.settings.max_sessions:
            await websocket.accept()
            log.warning("refusing a session: %d sessions already open (the limit)", service.sessions)
            await websocket.send_text(protocol.encode_error(
                None, protocol.OVERLOADED, f"the server is serving its limit of {service.settings.max_sessions} "
                                           "sessions; try again later"))
            await websocket.close(code=1013, reason="overloaded")
            return
        service.sessions += 1
        try:
            await SynthesisSession(websocket, service).run()
        finally:
            service.sessions -= 1

    return Starlette(
        routes=[
            Route("/ping", ping, methods=["GET"]),
            Route("/invocations", invocations, methods=["POST"]),
            WebSocketRoute(BIDI_PATH, bidirectional_stream),
        ],
        lifespan=lifespan,
    )


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it grows past ``limit`` bytes."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
