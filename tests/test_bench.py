"""Benchmarks are not tests; this only proves each suite still runs and writes its results."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_chunker_benchmark_runs_and_writes_results(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "voice_agent.cli", "bench", "chunker", "--trials", "1",
                                "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    results = json.loads((tmp_path / "chunker.json").read_text())
    assert set(results["splitters"]) >= {"voice-agent, whole text", "naive regex (AWS sample)", "pysbd 0.3"}
    assert all(figures["chars_per_second"] > 0 for figures in results["splitters"].values())
    assert "| splitter |" in (tmp_path / "chunker.md").read_text()


def test_the_tts_and_agent_benchmarks_run_once_and_write_results(tmp_path):
    for suite in ("tts", "agent"):
        completed = subprocess.run([sys.executable, "-m", "voice_agent.cli", "bench", suite, "--trials", "1",
                                    "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
        assert completed.returncode == 0, completed.stderr
    tts = json.loads((tmp_path / "tts.json").read_text())
    assert tts["passage_chars"] == 267 and tts["whole"]["trials"] == 1
    assert 0 < tts["first_sentence"]["mean"] and 0 < tts["whole"]["mean"]
    agent = json.loads((tmp_path / "agent.json").read_text())
    assert agent["first_audio_ratio"] > 0
    assert set(agent["summary"]) == {"incremental", "incremental, no quick first chunk",
                                     "incremental, no pipelining", "batch"}
    assert agent["barge_in"]["agent_stop_ms"]["trials"] == 3 and agent["barge_in"]["agent_stop_ms"]["max"] >= 0
    assert agent["barge_in"]["caller_cancel_to_end_ms"]["p50"] > 0


def test_the_capacity_benchmark_runs_once_and_writes_results(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "voice_agent.cli", "bench", "capacity", "--trials", "1",
                                "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    results = json.loads((tmp_path / "capacity.json").read_text())
    assert set(results["levels"]) == {"1", "2", "4"}
    assert all(level["audio_seconds_per_second"] > 0 for level in results["levels"].values())
    assert results["saturates_at"] in (1, 2, 4)


def test_the_encoding_benchmark_runs_once_and_writes_results(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "voice_agent.cli", "bench", "encoding", "--trials", "1",
                                "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    results = json.loads((tmp_path / "encoding.json").read_text())
    assert results["clips"] == 24 and set(results["formats"]) == {"pcm16", "wav", "mp3", "aac", "opus"}
    assert results["formats"]["pcm16"]["measured_kbps"] == 384.0
    for fmt in ("mp3", "aac", "opus"):
        figures = results["formats"][fmt]
        assert 0.8 * figures["label_kbps"] < figures["measured_kbps"] < 1.5 * figures["label_kbps"]
        assert abs(figures["base64_bytes"] / figures["bytes"] - 4 / 3) < 0.002  # Base64: 4 bytes per 3
