"""`voice-agent ask` as a user runs it: over SSE and /ws, every format, playing through a player
command that reads the stream from standard input, and --help that explains every option."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import audio
from tests.support.cli import run_cli


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
