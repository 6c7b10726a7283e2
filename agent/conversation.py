"""Conversations: one Strands agent per AgentCore session, and what an answer leaves in it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

from strands import Agent
from strands.agent.conversation_manager import SlidingWindowConversationManager
from strands.models import Model

log = logging.getLogger(__name__)

MAX_CONVERSATIONS = 256
"""Conversations kept in memory (``VOICE_AGENT_MAX_CONVERSATIONS``); beyond this the least recently
used one is forgotten: its session's next turn starts a new conversation."""
WINDOW_MESSAGES = 20
"""Messages a conversation keeps, and the model sees: ten turns, enough for a spoken exchange. Each
is at most a prompt (4,000 characters) or an answer (``BEDROCK_MAX_TOKENS``), so a conversation holds
tens of kilobytes at most, and all of them together a few tens of megabytes."""


def new_conversation(model: Model, system_prompt: str) -> Agent:
    """A conversation's Strands agent, which keeps its latest :data:`WINDOW_MESSAGES` messages."""
    return Agent(model=model, system_prompt=system_prompt, callback_handler=None,
                 conversation_manager=SlidingWindowConversationManager(window_size=WINDOW_MESSAGES))


class Heard(Protocol):
    def heard(self, played_ms: float) -> str: ...


@dataclass
class LastAnswer:
    """A session's latest answer that completed: where it starts in the conversation, and what of
    it was heard by any point of its playback (the caller may say so after it ended)."""

    turn: int
    history: int
    prompt: str
    record: Heard
    audio_ms: float


class Conversations:
    """One Strands agent per AgentCore session id, so the turns of a session share conversation
    memory (a sliding window of ``WINDOW_MESSAGES``). Turns of one session take turns: a second
    request waits for the first to finish. A request without a session id gets a fresh agent."""

    def __init__(self, make_agent: Callable[[], Agent], max_conversations: int = MAX_CONVERSATIONS) -> None:
        self._make_agent = make_agent
        self._max_conversations = max_conversations
        self._sessions: OrderedDict[str, tuple[Agent, asyncio.Lock, list[int]]] = OrderedDict()
        self._last: dict[str, LastAnswer] = {}

    def __len__(self) -> int:
        """Conversations kept."""
        return len(self._sessions)

    @contextlib.asynccontextmanager
    async def turn(self, session_id: str | None) -> AsyncIterator[tuple[Agent, int]]:
        """The session's agent and this turn's number (1 for the first), held for the turn."""
        if session_id is None:
            yield self._make_agent(), 1
            return
        if session_id not in self._sessions:
            self._sessions[session_id] = (self._make_agent(), asyncio.Lock(), [0])
            while len(self._sessions) > self._max_conversations:
                forgotten, _ = self._sessions.popitem(last=False)
                self._last.pop(forgotten, None)
                log.info("forgot the conversation of session %s, the least recently used of %d", forgotten,
                         self._max_conversations + 1)
        self._sessions.move_to_end(session_id)
        agent, lock, turns = self._sessions[session_id]
        async with lock:
            turns[0] += 1
            self._last.pop(session_id, None)  # a new turn: the one before can no longer be cut
            yield agent, turns[0]

    def completed(self, session_id: str | None, answer: LastAnswer) -> None:
        """Remember the session's answer that just completed (call it inside its turn)."""
        if session_id is not None and session_id in self._sessions:
            self._last[session_id] = answer

    async def cut_last(self, session_id: str, played_ms: float) -> bool:
        """The caller stopped playing the session's latest answer at ``played_ms``, after it had
        completed: keep what was heard of it, marked as interrupted (nothing when playback had
        reached its end, or another turn has begun since). Whether anything changed."""
        if session_id not in self._sessions:
            return False
        agent, lock, turns = self._sessions[session_id]
        async with lock:
            last = self._last.pop(session_id, None)
            if last is None or last.turn != turns[0] or played_ms >= last.audio_ms:
                return False
            heard = last.record.heard(played_ms)
            keep_what_was_said(agent, last.history, last.prompt, heard, interrupted=True)
            log.info("session %s: the listener stopped turn %d at %.0f of %.0f ms; the conversation keeps the "
                     "%d word(s) heard", session_id, last.turn, played_ms, last.audio_ms, len(heard.split()))
            return True


INTERRUPTED = "[interrupted by the user]"
"""What ends an answer the listener cut short, in the conversation: the model's next turn reads
that the user did not hear the rest."""


def keep_what_was_said(agent: Agent, history: int, prompt: str, said: str, *, interrupted: bool = False) -> None:
    """After an answer that did not complete (cancelled, abandoned, failed), leave the conversation
    as the caller experienced it: the question and what was heard of the answer (ending with
    :data:`INTERRUPTED` when ``interrupted``), or, when nothing was, no trace of the turn. Strands
    leaves the question without an answer when its stream is cancelled, and Bedrock refuses a
    conversation whose roles do not alternate."""
    del agent.messages[history:]
    if said:
        agent.messages.append({"role": "user", "content": [{"text": prompt}]})
        text = f"{said} {INTERRUPTED}" if interrupted else said
        agent.messages.append({"role": "assistant", "content": [{"text": text}]})
