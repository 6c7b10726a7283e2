"""``voice-agent containers`` (``./dev.sh containers``): build both images and answer one question
through them, exactly as the README's container commands do, then print each image's figures.

A Docker engine is used if one runs, else started (and stopped at the end); the base is pulled where
it can be, else made offline. Exit status: 0 answered, 1 failed (which part, how, its log's last
lines), 2 no Docker engine can run here (said in one line)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

DEFAULT_OUT_DIR = "out/containers"
QUESTION = "What is streaming?"
AGENT_PORT = 8080
"""The agent container always listens here, as AgentCore requires."""


def _containers(args: argparse.Namespace) -> int:
    from voice_agent.dev.docker_engine import EngineUnavailable, ensure_engine

    out_dir = Path(args.out_dir)
    try:
        engine = ensure_engine(out_dir / "dockerd.log")
    except EngineUnavailable as exc:
        print(f"containers: no Docker engine can run here: {exc}", file=sys.stderr)
        return 2
    print(f"engine: {engine.description}", flush=True)
    try:
        return _build_and_answer(engine, out_dir)
    finally:
        engine.stop()


def _build_and_answer(engine, out_dir: Path) -> int:
    from voice_agent.caller import CallerError, StreamBroken
    from voice_agent.dev import containers, servers
    from voice_agent.dev.python_base import BaseImageError, ensure_base

    try:
        base = ensure_base(engine, progress=_say)
        _say(f"base: {base.how}")
        built = {}
        for command in containers.readme_commands():
            if command.verb == "build":
                _say(f"building {command.image}: {' '.join(command.words)}")
                built[command.image] = containers.build(engine, command, base, out_dir / f"build-{command.image}.log")
                cached = " (every step cached)" if built[command.image].cached else ""
                _say(f"built {command.image} in {built[command.image].seconds:.0f} s{cached}")
        figures = _answer(engine, out_dir)
    except (BaseImageError, RuntimeError, servers.ServerStartError, servers.ServerDied, CallerError,
            StreamBroken) as exc:
        print(f"\ncontainers: {exc}", file=sys.stderr)
        return 1
    print(f"\n{'image':<20}{'size':>10}{'build':>16}{'run -> healthy':>16}{'peak memory while answering':>30}")
    for image, build in built.items():
        healthy, peak = figures[image]
        peak_text = f"{peak / 2**20:,.0f} MiB" if peak is not None else "not readable here"
        build_text = f"{build.seconds:.0f} s" + (" (cached)" if build.cached else "")
        print(f"{image:<20}{build.size_bytes / 1e6:>7,.0f} MB{build_text:>16}{healthy:>14.1f} s{peak_text:>30}")
    return 0


def _answer(engine, out_dir: Path) -> dict[str, tuple[float, int | None]]:
    """Start the README's TTS and offline agent containers, ask once, write the WAV; each image's
    time to healthy and peak memory while answering."""
    from voice_agent.caller import Options, ask, write_audio
    from voice_agent.dev import containers, servers

    tts_line = containers.readme_command("run", containers.TTS_IMAGE)
    agent_line = containers.readme_command("run", containers.AGENT_IMAGE,
                                           lambda command: command.environment.get("VOICE_AGENT_MODEL") == "replay")
    tts_port = int(tts_line.command[tts_line.command.index("--port") + 1])
    tts = containers.start(engine, tts_line, "voice-agent-tts", tts_port, out_dir / "tts.log", progress=_say)
    try:
        _say(f"TTS container healthy {tts.seconds_to_healthy:.1f} s after docker run")
        agent = containers.start(engine, agent_line, "voice-agent-agent", AGENT_PORT, out_dir / "agent.log",
                                 progress=_say)
        try:
            _say(f"agent container healthy {agent.seconds_to_healthy:.1f} s after docker run")
            for started in (tts, agent):
                containers.reset_memory_peak(engine, started.container)
            print(f"\nQ: {QUESTION}\nA: ", end="", flush=True)
            asking = ask(QUESTION, Options(url=f"http://127.0.0.1:{AGENT_PORT}"), on_event=_show_text)
            answer = asyncio.run(servers.supervised(asking, [agent.server, tts.server]))
            path = out_dir / "answer.wav"
            write_audio(str(path), answer)
            print(f"\nfirst audio {answer.time_to_first_audio_ms:.0f} ms, {answer.audio_seconds:.1f} s of audio in "
                  f"{len(answer.sentences)} chunk(s) -> {path}", flush=True)
            peaks = {started.container: containers.memory_peak(engine, started.container) for started in (tts, agent)}
        finally:
            containers.stop(engine, agent.server, agent.container)
    finally:
        containers.stop(engine, tts.server, tts.container)
    return {containers.TTS_IMAGE: (tts.seconds_to_healthy, peaks["voice-agent-tts"]),
            containers.AGENT_IMAGE: (agent.seconds_to_healthy, peaks["voice-agent-agent"])}


def _show_text(event: dict) -> None:
    if event["type"] == "text":
        print(event["text"], end="", flush=True)


def _say(message: str) -> None:
    print(message, flush=True)


def register(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser("containers", help="build both images, answer one question through them as the "
                                                     "README's commands run them, print each image's figures")
    command.add_argument("--out-dir", default=DEFAULT_OUT_DIR,
                         help=f"where the WAV, the build logs and the containers' logs go (default: {DEFAULT_OUT_DIR})")
    command.set_defaults(handler=_containers)
