"""The README's container lines as the container tier uses them."""

from __future__ import annotations

from voice_agent.dev import containers

AGENT_PORT = 8080
"""The agent image always listens here, as AgentCore requires."""


def tts_port(line: containers.DockerCommand) -> int:
    """The port a TTS run line serves on (its ``--port``)."""
    return int(line.command[line.command.index("--port") + 1])


def offline_agent_line() -> containers.DockerCommand:
    """The README's agent line that answers with a recording."""
    return containers.readme_command("run", containers.AGENT_IMAGE,
                                     lambda command: command.environment.get("VOICE_AGENT_MODEL") == "replay")
