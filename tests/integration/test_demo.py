"""`voice-agent demo`, the README's first command, as a user runs it: both servers up, the local
model asked once, both modes speaking the same answer, the timings printed, the WAVs written."""

from __future__ import annotations

import os
import re
import wave

from tests.support.cli import run_cli


def test_the_demo_speaks_one_answer_in_both_modes_and_prints_both_timings(tmp_path):
    # A short answer keeps the run short; the path is the one the README's command takes.
    env = {**os.environ, "VOICE_AGENT_LOCAL_MAX_TOKENS": "40"}
    completed = run_cli("demo", "--out-dir", str(tmp_path), timeout=900, env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    out = completed.stdout
    assert "both modes spoke the same answer" in out, out
    timings = re.search(r"time to first audio: incremental (\d+) ms, batch (\d+) ms: ([\d.]+)x sooner", out)
    assert timings, out
    for mode in ("incremental", "batch"):
        with wave.open(str(tmp_path / f"answer-{mode}.wav")) as wav:
            assert wav.getframerate() == 24_000 and wav.getnframes() > 24_000, f"{mode}: at least a second of speech"
    recordings = list((tmp_path / "model-streams").glob("*.jsonl"))
    assert len(recordings) == 1, "the live answer was recorded once, for batch mode to replay"
