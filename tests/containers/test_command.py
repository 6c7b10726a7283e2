"""``voice-agent containers`` (``./dev.sh containers``): it answers one question through both images
as the README runs them and prints each image's figures; where no Docker engine can run it says so
in one line and exits 2."""

from __future__ import annotations

import os
import re
import sys
import wave
from pathlib import Path

from tests.support.cli import run_cli


def test_the_command_answers_through_both_images_and_prints_their_figures(engine, images, tmp_path):
    completed = run_cli("containers", "--out-dir", str(tmp_path), timeout=1800)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "engine: a Docker engine was already running" in completed.stdout  # the tier's own, reused
    for image in ("voice-agent-tts", "voice-agent-agent"):
        row = re.search(rf"^{image}\s+([\d,]+) MB\s+(\d+) s.*?\s([\d.]+) s\s+(.+)$", completed.stdout, re.MULTILINE)
        assert row, completed.stdout
        assert int(row.group(1).replace(",", "")) > 200 and float(row.group(3)) > 0
        assert row.group(4).endswith("MiB"), "peak memory is readable from the container's cgroup here"
    with wave.open(str(tmp_path / "answer.wav")) as answer:
        assert answer.getframerate() == 24_000 and answer.getnframes() > 24_000  # over a second of speech


def test_without_a_docker_engine_the_command_says_so_in_one_line_and_exits_2(tmp_path):
    # A PATH with Python but no docker command: no engine can be used or started.
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    completed = run_cli("containers", "--out-dir", str(tmp_path), timeout=60,
                        env={**os.environ, "PATH": str(bare)})
    assert completed.returncode == 2
    assert completed.stderr.strip().count("\n") == 0
    assert completed.stderr.startswith("containers: no Docker engine can run here: no docker command")
    assert not Path(tmp_path / "answer.wav").exists()
