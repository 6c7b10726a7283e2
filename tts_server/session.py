"""One client's WebSocket session: the asyncio shell around ``tts_protocol.server.ServerSession``.

A receive loop feeds client messages to the state machine; a synthesizer works through the jobs in
order and queues each one's frames; a sender asks the state machine, at send time, whether each
frame may still go (a ``cancel`` cuts audio already queued) and sends it. So synthesis of request
n+1 overlaps with sending the audio of request n, and the ordering and one-reply-per-request
guarantees are the state machine's. Memory per session is bounded by ``max_queued_requests`` jobs
and ``max_buffered_frames`` queued frames; a session idle for ``idle_timeout`` seconds (with
nothing pending) is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import tts_protocol as protocol
from tts_protocol.server import EndOfInput, Job, Reply, ServerSession
from tts_server.service import Synthesis, SynthesisRefused, TTSService

log = logging.getLogger(__name__)

_END = object()


class SynthesisSession:
    def __init__(self, websocket: Any, service: TTSService) -> None:
        self._websocket = websocket
        self._service = service
        self._settings = service.settings
        self._protocol = ServerSession(max_queued=self._settings.max_queued_requests)
        # One slot more than the limit, for the end marker.
        self._jobs: asyncio.Queue[Any] = asyncio.Queue(self._settings.max_queued_requests + 1)
        self._outgoing: asyncio.Queue[Any] = asyncio.Queue(self._settings.max_buffered_frames)
        self._send_lock = asyncio.Lock()

    async def run(self) -> None:
        from starlette.websockets import WebSocketDisconnect

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
                if self._protocol.busy:
                    continue  # the client is waiting for audio, not idle
                log.info("closing a session idle for %.0f s", self._settings.idle_timeout)
                await self._websocket.close(code=1000, reason="idle timeout")
                return False
            if message["type"] == "websocket.disconnect":
                return False
            payload = message.get("text")
            action = self._protocol.receive(payload if payload is not None else message.get("bytes") or b"")
            if isinstance(action, Reply):
                await self._send_text(action.text)
            elif isinstance(action, Job):
                self._jobs.put_nowait(action)
            elif isinstance(action, EndOfInput):
                self._jobs.put_nowait(_END)
                return True

    async def _synthesize_jobs(self) -> None:
        while (job := await self._jobs.get()) is not _END:
            self._protocol.begin(job)
            try:
                await self._synthesize(job)
            except Exception as exc:
                log.exception("synthesis failed for %s", job.request_id)
                await self._outgoing.put((job, "fail", (protocol.SYNTHESIS_FAILED, f"{type(exc).__name__}: {exc}")))
        await self._outgoing.put(_END)

    async def _synthesize(self, job: Job) -> None:
        """Queue the job's frames for the sender; its final reply comes last."""
        request = job.request
        if isinstance(request, protocol.ProtocolError):
            await self._outgoing.put((job, "refuse", None))
            return
        if job.cancelled:
            await self._outgoing.put((job, "fail", (protocol.CANCELLED, "cancelled")))
            return
        synthesis = Synthesis()
        audio = self._service.synthesize(request, synthesis, stopped=lambda: job.cancelled,
                                         frame_bytes=self._settings.frame_samples * protocol.SAMPLE_WIDTH,
                                         windowed=self._settings.windows and request.windows)
        try:
            started = False
            async for item in audio:
                if not started:
                    await self._outgoing.put((job, "start", None))
                    started = True
                await self._outgoing.put((job, "audio" if isinstance(item, bytes) else "words", item))
        except SynthesisRefused as refused:
            await self._outgoing.put((job, "fail", (refused.code, refused.message)))
            return
        await self._outgoing.put((job, "complete", synthesis.stats()))

    async def _send_outgoing(self) -> None:
        """Send queued frames that the state machine still allows, in order."""
        machine = self._protocol
        while (item := await self._outgoing.get()) is not _END:
            job, kind, data = item
            if kind == "audio":
                frame = machine.audio(job, data)
                if frame is not None:
                    async with self._send_lock:
                        await self._websocket.send_bytes(frame)
                continue
            if kind == "words":
                for text in machine.words(job, data):
                    await self._send_text(text)
                continue
            if kind == "start":
                text = machine.start(job)
            elif kind == "complete":
                text = machine.complete(job, **data)
            elif kind == "refuse":
                text = machine.refusal(job)
            else:
                text = machine.fail(job, *data)
            if text is not None:
                await self._send_text(text)

    async def _send_text(self, text: str) -> None:
        async with self._send_lock:
            await self._websocket.send_text(text)
