"""A server that dies is a clear error wherever a user waits on one, and no server outlives the
process that started it.

The real servers are killed mid-answer with SIGKILL, as a native crash would end them."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys

import pytest

from agent.processes import EXIT_GRACE, Tie
from tests.support.agents import agent_running
from tests.support.cli import CLI
from tests.support.processes import alive, child_running, gone_within


async def read_until(stream: asyncio.StreamReader, marker: str, timeout: float = 120) -> str:
    """What ``stream`` printed up to and including ``marker``."""
    seen = ""
    async with asyncio.timeout(timeout):
        while marker not in seen:
            chunk = await stream.read(4096)
            assert chunk, f"the output ended before {marker!r}: {seen!r}"
            seen += chunk.decode(errors="replace")
    return seen


@pytest.mark.parametrize("leg", ["sse", "ws"])
async def test_ask_reports_a_stream_that_breaks_mid_answer_with_what_arrived(tts_server, artifacts, leg):
    async with agent_running(tts_server.ws_url, replay="long", log_path=str(artifacts / "agent-killed.log")) as agent:
        with Tie() as tie:
            ask = await asyncio.create_subprocess_exec(
                *CLI, "ask", "Go.", "--url", agent.http_url, *(["--ws"] if leg == "ws" else []),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=tie.env, pass_fds=tie.pass_fds)
            await read_until(ask.stdout, "[audio]")
            agent.process.kill()
            _, stderr = await asyncio.wait_for(ask.communicate(), 60)
    stderr = stderr.decode()
    assert ask.returncode == 1, stderr
    assert "Traceback" not in stderr
    message = re.search(r"error: the agent closed the stream before the answer ended.*received so far: "
                        r"(\d+) characters of text and ([\d.]+) s of audio", stderr)
    assert message, stderr
    assert int(message[1]) > 0 and float(message[2]) > 0


@pytest.mark.parametrize(("name", "command", "log"), [("agent", "serve-agent", "agent.log"),
                                                     ("TTS", "serve-tts", "tts.log")])
async def test_the_demo_names_the_server_that_died_and_exits_nonzero(tmp_path, name, command, log):
    tie = Tie()
    demo = await asyncio.create_subprocess_exec(
        *CLI, "demo", "--replay", "long", "--out-dir", str(tmp_path), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=tie.env, pass_fds=tie.pass_fds)
    try:
        await read_until(demo.stdout, "[incremental] A: ", timeout=300)
        started = {marker: child_running(demo.pid, marker) for marker in ("serve-agent", "serve-tts")}
        await asyncio.sleep(1.0)  # mid-answer: the replay writes for several seconds
        os.kill(started[command], signal.SIGKILL)
        _, stderr = await asyncio.wait_for(demo.communicate(), 60)
    finally:
        if demo.returncode is None:
            demo.kill()
        tie.close()
    stderr = stderr.decode()
    assert demo.returncode == 1, stderr
    assert "Traceback" not in stderr
    header = (f"error: the {name} server (pid {started[command]}) was killed by signal SIGKILL during the answer; "
              f"last lines of {tmp_path / log}:")
    assert header in stderr, stderr
    tail = stderr.split(header, 1)[1].splitlines()[1:]
    assert tail and all(line.startswith("  ") for line in tail[:3]), "the log's last lines follow, indented"
    assert all(gone_within(pid, 15) for pid in started.values()), "the other server was stopped with the demo"


def test_a_server_ends_with_the_process_that_started_it_however_that_ends():
    starter = subprocess.Popen(
        [sys.executable, "-c", "from voice_agent.dev import servers; import sys, time; "
                               "server = servers.start_bedrock_local('short'); print(server.process.pid, flush=True); "
                               "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(starter.stdout.readline())
        assert alive(server_pid)
        starter.kill()  # no cleanup runs in the starter: only the kernel closes its files
        starter.wait()
        assert gone_within(server_pid, EXIT_GRACE + 5), "the server outlived its parent"
    finally:
        if starter.poll() is None:
            starter.kill()
