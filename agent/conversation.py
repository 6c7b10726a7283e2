"""Conversations: one Strands agent per AgentCore session, and what an answer leaves in it."""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable

from strands import Agent

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


def keep_what_was_said(agent: Agent, history: int, prompt: str, said: str) -> None:
    """After an answer that did not complete (cancelled, abandoned, failed), leave the conversation
    as the caller experienced it: the question and what was sent of the answer, or, when nothing
    was, no trace of the turn. Strands leaves the question without an answer when its stream is
    cancelled, and Bedrock refuses a conversation whose roles do not alternate."""
    del agent.messages[history:]
    if said:
        agent.messages.append({"role": "user", "content": [{"text": prompt}]})
        agent.messages.append({"role": "assistant", "content": [{"text": said}]})
