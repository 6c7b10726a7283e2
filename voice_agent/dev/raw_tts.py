"""Reading a TTS container's answers on a raw WebSocket, for the tests and the reliability
benchmark, which send their own (sometimes malformed) messages: the reading itself is the client
state machine's (``tts_protocol.client``), the same one the agent's session uses."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from tts_protocol.client import Audio, ClientSession, Completed, Failed, Started, Words

REPLY_TIMEOUT = 30.0
"""Seconds to wait for each frame."""


@dataclass
class Outcome:
    """One request's answer: its events (``Started``, then ``Completed`` or ``Failed``), its audio
    and when its words are spoken."""

    events: list[Any] = field(default_factory=list)
    audio: bytearray = field(default_factory=bytearray)
    words: list[Any] = field(default_factory=list)

    @property
    def final(self) -> Completed | Failed:
        return self.events[-1]

    @property
    def complete(self) -> bool:
        """Completed, with exactly the audio the server says it sent."""
        return isinstance(self.final, Completed) and self.final.stats.get("audio_bytes") == len(self.audio)


async def read_answers(ws: Any, request_ids: list[str], *, first: str | bytes | None = None,
                       timeout: float = REPLY_TIMEOUT) -> tuple[dict[str, Outcome], list[str]]:
    """Read until each of ``request_ids`` has its final reply (``first``: a frame already read);
    the outcomes, and the order in which the requests started."""
    client = ClientSession()
    for request_id in request_ids:
        client.track(request_id)
    outcomes = {request_id: Outcome() for request_id in request_ids}
    order: list[str] = []
    while client.pending:
        frame, first = (first, None) if first is not None else (await asyncio.wait_for(ws.recv(), timeout), None)
        for event in client.receive(frame):
            if isinstance(event, Audio):
                outcomes[event.request_id].audio += event.data
                continue
            if isinstance(event, Words):
                outcomes[event.request_id].words += event.words
                continue
            if isinstance(event, Started):
                order.append(event.request_id)
            if isinstance(event, (Started, Completed, Failed)):
                outcomes[event.request_id].events.append(event)
    return outcomes, order
