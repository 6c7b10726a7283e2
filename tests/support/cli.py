"""Running ``voice-agent`` as a user does, from the tests; the command (and every server it starts)
ends with the test run however the run ends."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping

from agent.processes import Tie

CLI = [sys.executable, "-m", "voice_agent.cli"]


def run_cli(*args: str, timeout: float, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``voice-agent ARGS``: its exit status and output, text."""
    with Tie(env) as tie:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=tie.env,
                              pass_fds=tie.pass_fds, check=False)
