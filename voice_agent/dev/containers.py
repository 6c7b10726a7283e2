"""The README's container commands, run as written: the ``docker`` lines of its *Containers* section
are parsed here, so the README, ``voice-agent containers`` and the container tests cannot drift apart.

A run adds only what a harness must: ``--build-arg BASE_IMAGE=...`` where the official base cannot
be pulled, and ``--name`` so a container can be stopped and measured. Each container runs attached
(its ``docker run`` client is a child of this process, its output the log), so it is a
``servers.Server``: waited on until healthy, reported in one line if it dies, and stopped with this
process however it ends (``docker_engine.start_attached``)."""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from voice_agent.dev import servers
from voice_agent.dev.docker_engine import Engine, start_attached
from voice_agent.dev.python_base import OFFICIAL_BASE, BaseImage

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Containers"
TTS_IMAGE = "voice-agent-tts"
AGENT_IMAGE = "voice-agent-agent"
BUILD_TIMEOUT = 1800.0
"""Seconds for one image build (cold, about 4 minutes for the TTS image here: its packages and the
model's assembly)."""
START_TIMEOUT = 120.0
"""Seconds from ``docker run`` to a healthy ``/ping`` (the TTS container loads and warms the model:
about 6 s here)."""
_VALUE_OPTIONS = {"-e", "--env", "--name", "--network", "-p", "--publish", "-v", "--volume", "--label",
                  "--platform", "-u", "--user", "--entrypoint", "-w", "--workdir", "-f", "--file", "-t", "--tag",
                  "--build-arg", "--memory", "--cpus"}


@dataclass(frozen=True)
class DockerCommand:
    """One ``docker build`` or ``docker run`` line of the README, split as a shell would."""

    words: tuple[str, ...]

    @property
    def verb(self) -> str:
        return self.words[1]

    def _options(self) -> tuple[list[tuple[str, str]], list[str]]:
        """(option, value) pairs, and the words after the options (a run's image and command)."""
        options, index = [], 2
        while index < len(self.words) and self.words[index].startswith("-"):
            word = self.words[index]
            if "=" in word and word.startswith("--"):
                options.append(tuple(word.split("=", 1)))
            elif word in _VALUE_OPTIONS:
                options.append((word, self.words[index + 1]))
                index += 1
            else:
                options.append((word, ""))
            index += 1
        return options, list(self.words[index:])

    @property
    def image(self) -> str:
        """The image a run starts, or the tag a build makes."""
        options, rest = self._options()
        if self.verb == "build":
            return next(value for option, value in options if option in ("-t", "--tag"))
        return rest[0]

    @property
    def command(self) -> list[str]:
        """A run's command (the words after the image)."""
        return self._options()[1][1:]

    @property
    def environment(self) -> dict[str, str | None]:
        """A run's ``-e`` variables; None for one passed through from the caller's environment."""
        pairs = [value for option, value in self._options()[0] if option in ("-e", "--env")]
        return {pair.split("=", 1)[0]: pair.split("=", 1)[1] if "=" in pair else None for pair in pairs}

    def with_options(self, *options: str) -> list[str]:
        """The line's words after ``docker``, with ``options`` inserted after the verb."""
        return [self.verb, *options, *self.words[2:]]

    def replaced(self, old: str, new: str) -> DockerCommand:
        """The line with ``old`` replaced in every word (a test's second container on another port)."""
        return DockerCommand(tuple(word.replace(old, new) for word in self.words))

    def with_env(self, **variables: str) -> DockerCommand:
        """The line with more ``-e NAME=VALUE`` options, after its own (so they win)."""
        options = [word for name, value in variables.items() for word in ("-e", f"{name}={value}")]
        rest = len(self._options()[1])
        return DockerCommand((*self.words[:len(self.words) - rest], *options, *self.words[len(self.words) - rest:]))


def readme_commands(readme: Path = README) -> list[DockerCommand]:
    """The ``docker`` lines of the README's container section's ``bash`` blocks, in order."""
    text = readme.read_text()
    start = text.index(f"\n{SECTION}\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end != -1 else len(text)]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["docker"] and words[1:2] in (["build"], ["run"]):
                commands.append(DockerCommand(tuple(words)))
    return commands


def readme_command(verb: str, image: str, where: Callable[[DockerCommand], bool] = lambda command: True,
                   readme: Path = README) -> DockerCommand:
    """The README's one ``docker VERB`` line for ``image`` that ``where`` accepts."""
    found = [command for command in readme_commands(readme)
             if command.verb == verb and command.image == image and where(command)]
    if len(found) != 1:
        raise LookupError(f"expected one 'docker {verb}' line for {image} in {readme}'s {SECTION}, found {len(found)}")
    return found[0]


@dataclass(frozen=True)
class Built:
    image: str
    seconds: float
    size_bytes: int
    cached: bool
    """Every step came from the engine's build cache (the classic builder ran nothing)."""


def build(engine: Engine, command: DockerCommand, base: BaseImage, log_path: Path) -> Built:
    """Run a README build line (with the base named when it is not the official one), from the
    repository's root; its output goes to ``log_path``."""
    options = [] if base.name == OFFICIAL_BASE else ["--build-arg", f"BASE_IMAGE={base.name}"]
    started = time.monotonic()
    result = engine.docker(*command.with_options(*options), timeout=BUILD_TIMEOUT, check=False, cwd=README.parent)
    seconds = time.monotonic() - started
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        tail = "".join(f"\n  {line}" for line in (result.stdout + result.stderr).strip().splitlines()[-12:])
        raise RuntimeError(f"building {command.image} failed (status {result.returncode}); last lines of "
                           f"{log_path}:{tail}")
    size = int(engine.docker("image", "inspect", "--format", "{{.Size}}", command.image).stdout.strip())
    return Built(command.image, seconds, size, cached="Running in " not in result.stdout)


@dataclass
class Started:
    server: servers.Server
    container: str
    seconds_to_healthy: float


def start(engine: Engine, command: DockerCommand, container: str, port: int, log_path: Path,
          timeout: float = START_TIMEOUT, progress: Callable[[str], None] | None = None,
          env: Mapping[str, str] | None = None) -> Started:
    """Run a README run line as container ``container`` and wait for its ``/ping`` on ``port``.
    ``env`` adds to the client's environment (the values of the line's pass-through ``-e NAME``)."""
    engine.docker("rm", "--force", container, check=False)  # one left by a run that was killed
    began = time.monotonic()
    process = start_attached(engine, command.with_options("--name", container), log_path, env)
    server = servers.Server(container, port, process, str(log_path))
    try:
        servers.wait_healthy(server, timeout, progress)
    except BaseException:
        stop(engine, server, container)
        raise
    return Started(server, container, time.monotonic() - began)


def stop(engine: Engine, server: servers.Server, container: str, timeout: float = 15.0) -> float:
    """``docker stop`` the container (SIGTERM, SIGKILL after 10 s); returns the seconds it took to
    end. Its attached client then exits."""
    began = time.monotonic()
    if not server.died():
        engine.docker("stop", container, check=False, timeout=timeout + 10)
    servers.stop(server, timeout=timeout)
    return time.monotonic() - began


def _memory_file(engine: Engine, container: str) -> Path | None:
    """The container's cgroup file of peak memory: ``memory.max_usage_in_bytes`` (cgroup v1) or
    ``memory.peak`` (v2); None where neither can be read."""
    pid = engine.docker("inspect", "--format", "{{.State.Pid}}", container, check=False).stdout.strip()
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except (OSError, ValueError):
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            candidate = Path("/sys/fs/cgroup/memory") / path.lstrip("/") / "memory.max_usage_in_bytes"
        elif controllers == "":
            candidate = Path("/sys/fs/cgroup") / path.lstrip("/") / "memory.peak"
        else:
            continue
        if candidate.is_file():
            return candidate
    return None


def reset_memory_peak(engine: Engine, container: str) -> bool:
    """Start the container's peak memory afresh (cgroup v1, as root); False where it cannot be."""
    path = _memory_file(engine, container)
    try:
        if path is not None and path.name == "memory.max_usage_in_bytes":
            path.write_text("0")
            return True
    except OSError:
        pass
    return False


def memory_peak(engine: Engine, container: str) -> int | None:
    """The container's peak memory in bytes (its cgroup's, page cache included), or None."""
    path = _memory_file(engine, container)
    try:
        return int(path.read_text()) if path is not None else None
    except (OSError, ValueError):
        return None
