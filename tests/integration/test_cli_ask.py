"""`voice-agent ask` as a user runs it: over SSE and /ws, every format, playing through a player
command that reads the stream from standard input, and --help that explains every option."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from agent.processes import Tie
from tests.support import audio
from tests.support.cli import CLI, run_cli


def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=timeout)


@pytest.mark.parametrize(("leg", "fmt"), [("--ws", "mp3"), ("--ws", "pcm16"), (None, "opus")])
def test_ask_streams_plays_and_saves_the_answer(agent_server, tmp_path, leg, fmt):
    url = agent_server("short").http_url
    played, saved = tmp_path / "played", tmp_path / f"answer.{fmt}"
    # The player is any command reading the stream from stdin; this one keeps what it was given.
    player = f"{sys.executable} -c \"import shutil,sys; shutil.copyfileobj(sys.stdin.buffer, open('{played}','wb'))\""
    completed = run("ask", "Go.", "--url", url, "--format", fmt, "--out", str(saved), "--player", player, "--json",
                    *([leg] if leg else []))
    assert completed.returncode == 0, completed.stderr
    summary = json.loads(completed.stdout)
    assert summary["format"] == fmt and summary["time_to_first_audio_ms"] > 0
    assert "[audio]" in completed.stderr, "live progress marks where the first audio arrived"
    stream = played.read_bytes()
    assert stream, "the player was fed"
    saved_bytes = saved.read_bytes()
    if fmt == "pcm16":
        assert saved_bytes.startswith(b"RIFF") and saved_bytes.endswith(stream)  # saved as WAV
    else:
        assert saved_bytes == stream
    assert abs(len(audio.decode(saved_bytes)) / 24_000 - summary["audio_seconds"]) < 0.1


def test_ask_captions_print_each_word_as_it_is_heard_and_the_json_carries_the_timings(agent_server, tmp_path):
    kept = tmp_path / "played"
    player = f"{sys.executable} -c \"import shutil,sys; shutil.copyfileobj(sys.stdin.buffer, open('{kept}','wb'))\""
    started = time.monotonic()
    completed = run("ask", "Go.", "--url", agent_server("short").http_url, "--ws", "--captions", "--player", player,
                    "--json")
    elapsed = time.monotonic() - started
    assert completed.returncode == 0, completed.stderr
    words = json.loads(completed.stdout)["words"]
    assert len(words) > 5 and all(w["start_ms"] <= w["end_ms"] for w in words)
    assert [w["start_ms"] for w in words] == sorted(w["start_ms"] for w in words), "one timeline"
    assert completed.stderr.split() == [w["word"] for w in words], "each word printed once, in order"
    assert elapsed >= words[-1]["start_ms"] / 1000, "a word is printed when it is heard, not before"


def test_ask_captions_need_a_player(agent_server):
    completed = run("ask", "Go.", "--url", agent_server("short").http_url, "--captions", timeout=60)
    assert completed.returncode == 2 and "--play" in completed.stderr


def test_ask_says_what_to_install_when_no_player_exists(agent_server):
    completed = run_cli("ask", "Go.", "--url", agent_server("short").http_url, "--play", "--format", "aac",
                        timeout=60, env={**os.environ, "PATH": "/nonexistent"})
    assert completed.returncode == 2 and "ffplay" in completed.stderr


def test_ask_help_explains_every_option():
    completed = run("ask", "--help", timeout=60)
    assert completed.returncode == 0
    options = [word.rstrip(",") for word in completed.stdout.split() if word.startswith("--")]
    for option in ("--ws", "--format", "--play", "--player", "--runtime-arn", "--session-id", "--json", "--mode"):
        assert option in options
    # Every option carries an explanation, not just its name.
    from voice_agent.cli import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command")
    ask = commands.choices["ask"]
    unexplained = [a.option_strings or a.dest for a in ask._actions if not a.help]
    assert unexplained == []


def test_ctrl_c_while_the_answer_plays_stops_it_and_tells_the_agent_how_much_was_heard(agent_server, artifacts):
    """A player that plays in real time (48,000 bytes of pcm16 a second); SIGINT once the captions
    have printed three words, as a listener who interrupts a few words in."""
    agent = agent_server("long")
    session = f"interrupted-{os.getpid()}"
    player = f"{sys.executable} -c \"import sys,time\nwhile sys.stdin.buffer.read(4800): time.sleep(0.1)\""
    with Tie() as tie:
        process = subprocess.Popen([*CLI, "ask", "Go.", "--url", agent.http_url, "--ws", "--session-id", session,
                                    "--player", player, "--captions"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=tie.env, pass_fds=tie.pass_fds)
        try:
            printed = b""
            deadline = time.monotonic() + 60
            while len(printed.split()) < 3 and time.monotonic() < deadline:
                printed += os.read(process.stdout.fileno(), 1)
            process.send_signal(signal.SIGINT)
            rest, stderr = process.communicate(timeout=30)
        finally:
            process.kill()
    stderr = stderr.decode()
    assert process.returncode == 130, stderr
    heard_words = len((printed + rest).split())
    played = float(re.search(r"interrupted after ([\d.]+) s of the answer", stderr).group(1))
    log = (artifacts / "agent-long.log").read_text()
    stops = re.findall(rf"session {session}: the listener stopped turn 1 at (\d+) (?:of \d+ )?ms; the conversation "
                       r"keeps the (\d+) word", log)
    assert stops, "the agent was told where playback stopped"
    stopped_ms, kept = map(int, stops[-1])
    assert abs(stopped_ms / 1000 - played) <= 0.05, "the agent was told the position the caller stopped at"
    assert heard_words >= 3 and abs(kept - heard_words) <= 2, (kept, heard_words)
