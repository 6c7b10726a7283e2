"""Ctrl-C while `voice-agent ask` plays an answer always stops it, wherever in the answer it lands."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from voice_agent.commands.ask import run_interruptibly


async def interrupted_during_clean_up() -> str:
    """Ctrl-C lands while a library finishes its clean-up and does not pass the cancellation on."""
    os.kill(os.getpid(), signal.SIGINT)
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        return "finished anyway"
    return "never interrupted"


async def interrupted_mid_answer() -> str:
    os.kill(os.getpid(), signal.SIGINT)
    await asyncio.sleep(30)
    return "never interrupted"


async def answered() -> str:
    await asyncio.sleep(0)
    return "the answer"


@pytest.mark.parametrize("coroutine", [interrupted_during_clean_up, interrupted_mid_answer])
def test_ctrl_c_ends_in_keyboard_interrupt_even_when_the_cancellation_is_swallowed(coroutine):
    with pytest.raises(KeyboardInterrupt):
        run_interruptibly(coroutine())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_answer_without_ctrl_c_is_returned():
    assert run_interruptibly(answered()) == "the answer"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
