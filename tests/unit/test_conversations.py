"""Conversation memory per AgentCore session, with the real Strands agent loop."""

from __future__ import annotations

import asyncio

from strands import Agent

from agent.conversation import WINDOW_MESSAGES, Conversations, new_conversation
from agent.llm.replay import ReplayModel, load_recording


def make_agent() -> Agent:
    return Agent(model=ReplayModel(load_recording("short"), speed=50), callback_handler=None)


async def ask(conversations: Conversations, session_id: str | None, prompt: str) -> tuple[Agent, int]:
    async with conversations.turn(session_id) as (agent, turn):
        async for _ in agent.stream_async(prompt):
            pass
        return agent, turn


async def test_a_session_keeps_its_messages_across_turns_and_others_do_not_see_them():
    conversations = Conversations(make_agent)
    agent, turn = await ask(conversations, "s1", "First question")
    again, second_turn = await ask(conversations, "s1", "Second question")
    other, other_turn = await ask(conversations, "s2", "Unrelated")
    assert again is agent and (turn, second_turn) == (1, 2)
    prompts = [m["content"][0]["text"] for m in agent.messages if m["role"] == "user"]
    assert prompts == ["First question", "Second question"]
    assert other is not agent and other_turn == 1 and len(other.messages) == 2


async def test_requests_without_a_session_share_nothing():
    conversations = Conversations(make_agent)
    first, _ = await ask(conversations, None, "One")
    second, _ = await ask(conversations, None, "Two")
    assert first is not second


async def test_the_least_recently_used_session_is_forgotten_beyond_the_limit():
    conversations = Conversations(make_agent, max_conversations=2)
    a, _ = await ask(conversations, "a", "x")
    await ask(conversations, "b", "x")
    await ask(conversations, "a", "x")
    await ask(conversations, "c", "x")  # forgets b, the least recently used
    a_again, turn = await ask(conversations, "a", "x")
    b_again, b_turn = await ask(conversations, "b", "x")
    assert a_again is a and turn == 3
    assert b_turn == 1


async def test_concurrent_turns_of_one_session_take_turns():
    conversations = Conversations(make_agent)
    results = await asyncio.gather(*(ask(conversations, "same", f"q{i}") for i in range(3)))
    assert sorted(turn for _, turn in results) == [1, 2, 3]
    assert len(results[0][0].messages) == 6


def user_prompts(agent: Agent) -> list[str]:
    return [message["content"][0]["text"] for message in agent.messages if message["role"] == "user"]


async def test_interleaved_sessions_each_see_only_their_own_history():
    conversations = Conversations(make_agent)
    sessions = [f"session-{index}" for index in range(4)]
    # Three rounds; in each, every session's turn runs at once with the others'.
    for round_ in range(3):
        await asyncio.gather(*(ask(conversations, session, f"{session} question {round_}") for session in sessions))
    for session in sessions:
        async with conversations.turn(session) as (agent, turn):
            assert turn == 4
            assert user_prompts(agent) == [f"{session} question {round_}" for round_ in range(3)]


async def test_a_conversation_keeps_its_latest_window_of_messages_and_drops_the_oldest():
    conversations = Conversations(lambda: new_conversation(ReplayModel(load_recording("short"), speed=50), "Be brief."))
    turns = WINDOW_MESSAGES  # twice the window's turns: each turn is a question and an answer
    for index in range(turns):
        agent, _ = await ask(conversations, "long", f"question {index}")
    assert len(agent.messages) <= WINDOW_MESSAGES
    assert user_prompts(agent)[-1] == f"question {turns - 1}" and "question 0" not in user_prompts(agent)
