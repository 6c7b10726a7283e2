"""The caller's side of leg 1: ask an agent one question and collect its spoken answer.

One entry point, :func:`ask`, and one :class:`Options` object say where and how: a local agent
over HTTP (SSE, Base64 audio) or its binary ``/ws`` leg, or a deployed agent through AgentCore's
``InvokeAgentRuntime`` (SSE) or its SigV4-signed WebSocket route. Whatever the leg, the answer's
events are read by ``caller_protocol.AnswerReader`` and collected into an :class:`Answer`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from voice_agent.caller.answer import Answer, CallerError, Options, StreamBroken, new_session_id, write_audio

__all__ = ["Answer", "CallerError", "Options", "StreamBroken", "ask", "new_session_id", "write_audio"]


async def ask(prompt: str, options: Options | None = None, *,
              on_event: Callable[[dict[str, Any]], None] | None = None,
              cancel_after: Callable[[Answer], bool] | None = None,
              played: Callable[[], float] | None = None) -> Answer:
    """Ask once and collect the answer. ``on_event`` sees each event as it arrives (an audio
    event's bytes in ``event["data"]``). On the ``/ws`` legs, ``cancel_after(answer)`` is asked
    after every event; when it says yes the caller sends ``cancel`` (barge-in) and collects the
    answer's remaining events. ``played()`` says how much of the answer the listener has played:
    on the ``/ws`` legs, an ask that is cancelled (Ctrl-C) then tells the agent so.

    Raises :class:`CallerError` for a refused request, an ``error`` event or a malformed answer,
    and :class:`StreamBroken` when the stream ends before the answer does."""
    options = options or Options()
    if options.ws:
        from voice_agent.caller.websocket import ask_over_ws

        return await ask_over_ws(prompt, options, on_event, cancel_after, played)
    if cancel_after is not None:
        raise ValueError("cancel_after needs the /ws leg (Options(ws=True))")
    if options.runtime_arn:
        from voice_agent.caller.runtime import ask_runtime

        return await asyncio.to_thread(ask_runtime, prompt, options, on_event)
    from voice_agent.caller.http import ask_over_http

    return await ask_over_http(prompt, options, on_event)
