"""The container tier: both images built by the README's own lines on a real Docker engine (the
running one, or one started for the run and stopped after it), and containers started by those
lines. Without an engine the tier is skipped, and the reason printed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.containers import tts_port
from voice_agent.dev import containers
from voice_agent.dev.docker_engine import Engine, EngineUnavailable, ensure_engine
from voice_agent.dev.python_base import BaseImage, ensure_base


@pytest.fixture(scope="session")
def engine(artifacts: Path) -> Iterator[Engine]:
    try:
        engine = ensure_engine(artifacts / "dockerd.log")
    except EngineUnavailable as exc:
        pytest.skip(f"container tier: no Docker engine can run here: {exc}")
    print(f"container tier: {engine.description}")
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def base(engine: Engine) -> BaseImage:
    return ensure_base(engine)


@pytest.fixture(scope="session")
def images(engine: Engine, base: BaseImage, artifacts: Path) -> dict[str, containers.Built]:
    """Both images, built by the README's build lines as written (plus the base, where it is not the
    official one)."""
    return {command.image: containers.build(engine, command, base, artifacts / f"build-{command.image}.log")
            for command in containers.readme_commands() if command.verb == "build"}


@pytest.fixture(scope="module")
def tts_container(engine: Engine, images, artifacts: Path) -> Iterator[containers.Started]:
    """The TTS container as the README runs it, shared by a module's tests (its model loads once)."""
    line = containers.readme_command("run", containers.TTS_IMAGE)
    started = containers.start(engine, line, "test-tts", tts_port(line), artifacts / "container-tts.log")
    yield started
    containers.stop(engine, started.server, started.container)


@pytest.fixture
def start_container(engine: Engine, artifacts: Path) -> Iterator[Callable[..., containers.Started]]:
    """``start_container(line, name, port, env=...)``: a container for one test, stopped after it."""
    started: list[containers.Started] = []

    def start(line: containers.DockerCommand, name: str, port: int, **options) -> containers.Started:
        started.append(containers.start(engine, line, name, port, artifacts / f"container-{name}.log", **options))
        return started[-1]

    yield start
    for container in reversed(started):
        containers.stop(engine, container.server, container.container)
