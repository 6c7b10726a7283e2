"""Benchmarks are not tests; this only proves each suite still runs and writes its results."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import run_cli
from tts_server.static_decoder import STATIC_SUFFIX
from voice_agent.bench import agent as bench_agent
from voice_agent.bench import capacity, encoding, engine, overhead, reliability, timings, voices
from voice_agent.bench import rendering as bench_rendering
from voice_agent.bench.chunker import QUICK_CASES


def run_suite(suite: str, out_dir) -> dict:
    """``voice-agent bench SUITE --quick``: it succeeds, and its JSON results."""
    completed = run_cli("bench", suite, "--quick", "--out-dir", str(out_dir), timeout=600)
    assert completed.returncode == 0, completed.stderr
    return json.loads((out_dir / f"{suite}.json").read_text())


def assert_plot(out_dir, suite: str) -> None:
    """The suite drew its PNG, and its Markdown report shows it."""
    assert (out_dir / f"{suite}.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert f"]({suite}.png)" in (out_dir / f"{suite}.md").read_text()


def test_the_chunker_benchmark_runs_and_writes_results(tmp_path):
    results = run_suite("chunker", tmp_path)
    assert set(results["chars_per_second"]) >= {"voice-agent, whole text", "naive regex (AWS sample)", "pysbd 0.3"}
    assert all(speed > 0 for speed in results["chars_per_second"].values())
    assert {"own", "brown-held", "sbd"} <= set(results["sources"])
    assert all(figures["cases"] <= QUICK_CASES for figures in results["sources"].values())
    assert not results["sources"]["brown-held"]["developed_against"]
    others = results["others"]
    assert others["cases"] == sum(figures["cases"] for name, figures in results["sources"].items() if name != "own")
    mine = others["splitters"]["voice-agent, 1-char deltas"]
    assert mine == others["splitters"]["voice-agent, whole text"], "delta independence on every case"
    assert mine["correct"] + mine["wrong_split_cases"] >= others["cases"] - mine["missed_split_cases"]
    assert 0 < results["lookahead"]["max_chars"] and set(results["first_chunk"]) >= {"clauses", "long"}
    assert "| splitter |" in (tmp_path / "chunker.md").read_text()
    assert_plot(tmp_path, "chunker")


def test_the_tts_and_agent_benchmarks_run_once_and_write_results(tmp_path):
    tts = run_suite("tts", tmp_path)
    assert tts["passage_chars"] == 267 and tts["whole"]["trials"] == 1
    assert 0 < tts["first_sentence"]["mean"] and 0 < tts["whole"]["mean"]
    agent = run_suite("agent", tmp_path)
    assert_plot(tmp_path, "tts")
    assert_plot(tmp_path, "agent")
    assert agent["first_audio_ratio"] > 0
    assert set(agent["summary"]) == set(bench_agent.QUICK_CONFIGURATIONS) <= set(bench_agent.CONFIGURATIONS)
    assert agent["barge_in"]["agent_stop_ms"]["trials"] == 3 and agent["barge_in"]["agent_stop_ms"]["max"] >= 0
    assert agent["barge_in"]["caller_cancel_to_end_ms"]["p50"] > 0
    assert set(agent["targets"]) == set(bench_agent.TARGETS), "each answer with a target, in the same run"
    for name, target in agent["targets"].items():
        first, speech = target["first_audio_ms"], target["first_speech_ms"]
        assert first["trials"] == 1 and speech["p50"] > first["p50"]
        assert target["met"] == (first["p50"] <= bench_agent.TARGETS[name])
    stalls = agent["stalls"][bench_agent.QUICK_RECORDING]
    assert set(stalls) == {str(level) for level in bench_agent.QUICK_STALL_LEVELS}
    for level, figures in stalls.items():
        assert len(figures["sessions"]) == int(level) and all(s["audio_ms"] > 0 for s in figures["sessions"])
        assert figures["underruns"] == sum(s["underruns"] for s in figures["sessions"])
    assert "underruns" in (tmp_path / "agent.md").read_text() and "| `long` |" in (tmp_path / "agent.md").read_text()


def test_the_capacity_benchmark_runs_once_and_writes_results(tmp_path):
    results = run_suite("capacity", tmp_path)
    assert set(results["levels"]) == {str(level) for level in capacity.QUICK_LEVELS}
    assert all(level["audio_seconds_per_second"] > 0 for level in results["levels"].values())
    assert results["saturates_at"] in capacity.QUICK_LEVELS
    assert set(results["whole"]["levels"]) == set(results["levels"]), "the whole-render server, side by side"
    assert set(results["model_decoder"]["levels"]) == set(results["levels"]), "the model's decoder, side by side"
    assert_plot(tmp_path, "capacity")


def test_the_encoding_benchmark_runs_once_and_writes_results(tmp_path):
    results = run_suite("encoding", tmp_path)
    assert results["clips"] == encoding.QUICK_CLIPS
    assert set(results["formats"]) == {"pcm16", "wav", "mp3", "aac", "opus"}
    assert results["formats"]["pcm16"]["measured_kbps"] == 384.0
    for fmt in ("mp3", "aac", "opus"):
        figures = results["formats"][fmt]
        assert 0.8 * figures["label_kbps"] < figures["measured_kbps"] < 1.5 * figures["label_kbps"]
        assert abs(figures["base64_bytes"] / figures["bytes"] - 4 / 3) < 0.002  # Base64: 4 bytes per 3
    assert_plot(tmp_path, "encoding")


def test_the_overhead_benchmark_runs_once_and_writes_results(tmp_path):
    results = run_suite("overhead", tmp_path)
    assert [answer["recording"] for answer in results["answers"]] == list(overhead.QUICK_RECORDINGS)
    assert [answer["recording"] for answer in results["whole"]["answers"]] == list(overhead.QUICK_RECORDINGS)
    assert results["ready_to_first_audio_ratio"] == pytest.approx(
        results["ready_to_first_audio_ms"]["p50"] / results["whole"]["ready_to_first_audio_ms"]["p50"], abs=0.01)
    assert set(results["first_audio_ms"]) == set(results["whole"]["first_audio_ms"]) == set(overhead.QUICK_RECORDINGS)
    for answer in results["answers"] + results["whole"]["answers"]:
        # The parts add up: first audio is at least the chunk's readiness plus its inference.
        assert answer["first_chunk_inference_ms"] > 0 and answer["first_chunk_ready_ms"] > 0
        assert answer["pipeline_overhead_ms"] == pytest.approx(
            answer["time_to_first_audio_ms"] - answer["first_chunk_ready_ms"] - answer["first_chunk_inference_ms"],
            abs=0.2)
        assert answer["pipeline_overhead_ms"] >= 0
    assert "rendering every request whole" in (tmp_path / "overhead.md").read_text()
    assert_plot(tmp_path, "overhead")


def test_the_reliability_benchmark_runs_once_and_writes_results(tmp_path):
    """The suite's load levels are also the reliability tier's load test: every accepted session is
    answered in order with complete audio, the rest refused as overloaded, memory bounded, and a
    session opened after the heaviest level (the fuzzer's) is served. Callers that leave mid-answer
    and a short soak leave nothing behind in the agent."""
    results = run_suite("reliability", tmp_path)
    assert [level["sessions"] for level in results["load"]] == list(reliability.QUICK_LEVELS)
    assert results["max_sessions"] < reliability.QUICK_LEVELS[-1], "the last level must see refusals"
    for level in results["load"]:
        assert level["accepted"] == min(level["sessions"], results["max_sessions"])
        assert level["refused"] == level["sessions"] - level["accepted"]
        assert level["refusal_codes"] == (["overloaded"] if level["refused"] else [])
        assert level["all_in_order"] and level["all_complete"]
    assert results["peak_rss_mb"] < 2_500, "memory stays bounded under load"
    fuzz = results["fuzz"]
    assert fuzz["frames"] == 3 * reliability.QUICK_FUZZ and (fuzz["crashes"], fuzz["hangs"]) == (0, 0)
    assert fuzz["wrong_answers"] == 0 and all(leg["valid_request_after"] for leg in fuzz["legs"].values())
    assert results["peak_rss_mb"] > 0
    left = results["leaving"]
    assert left["left_mid_answer"] + left["answer_ended_first"] == reliability.QUICK_LEAVING
    assert left["never_stopped"] == 0 and left["leaked_tasks"] == 0 and left["leaked_fds"] == 0
    assert left["hung"] == 0 and left["answers_left_running"] == 0
    soaked = results["soak"]
    assert soaked["answers"] == sum(soaked["kinds"].values()) == reliability.QUICK_SOAK
    assert soaked["task_growth"] <= 0 and soaked["fd_growth"] <= 0, "an answer left a task or a socket behind"
    assert soaked["kinds"]["hung"] == 0 and soaked["answers_left_running"] == 0
    campaign = results["faults"]
    assert campaign["injected"] == reliability.QUICK_FAULT_ANSWERS <= campaign["answers"]
    assert (campaign["damaged"], campaign["sentences_lost"], campaign["sentences_duplicated"],
            campaign["corrupted"], campaign["recoverable_failed"]) == (0, 0, 0, 0, 0), campaign
    assert campaign["recovered"] + campaign["failed_cleanly"] == campaign["injected"]
    assert_plot(tmp_path, "reliability")


def test_the_local_model_benchmark_runs_once_and_reports_its_build(tmp_path):
    results = run_suite("local_model", tmp_path)
    assert results["tokens_per_second"]["trials"] == 1 and results["tokens_per_second"]["mean"] > 0
    assert results["first_token_ms"]["p50"] > 0 and results["tokens"][0] > 1
    assert results["features"].startswith("CPU :"), "the build's CPU features are reported"
    assert "tokens per second" in (tmp_path / "local_model.md").read_text()


def test_the_timings_benchmark_runs_once_and_reports_both_clocks(tmp_path):
    results = run_suite("timings", tmp_path)
    assert results["sentences"] == timings.QUICK_SENTENCES and results["words_timed"] == results["words"]
    assert results["start_vs_recogniser_ms"]["trials"] > 5
    assert results["first_start_vs_onset_ms"]["trials"] == timings.QUICK_SENTENCES
    assert "| word times against |" in (tmp_path / "timings.md").read_text()


def test_the_voices_benchmark_runs_once_and_ranks_every_packaged_voice(tmp_path):
    results = run_suite("voices", tmp_path)
    assert sorted(results["ranking"]) == sorted(results["voices"]) and len(results["voices"]) == 5
    assert results["sentences"] == {"plain": voices.QUICK_SENTENCES, "numbers": voices.QUICK_SENTENCES}
    for figures in results["voices"].values():
        for name in ("plain", "numbers"):
            counted = figures["sets"][name]
            assert counted["reference_words"] > 0 and 0 <= counted["wer"] == round(
                counted["errors"] / counted["reference_words"], 4)
    wer = [results["voices"][voice]["wer"] for voice in results["ranking"]]
    assert wer == sorted(wer) and results["clearest"] == results["ranking"][0]
    assert_plot(tmp_path, "voices")


def test_the_engine_benchmark_runs_each_candidate_in_its_own_process(tmp_path):
    results = run_suite("engine", tmp_path)
    assert list(results["candidates"]) == list(engine.CANDIDATES)[:engine.QUICK_CANDIDATES]
    for figures in results["candidates"].values():
        assert set(figures["lengths"]) == {str(count) for count in engine.QUICK_WORD_COUNTS}
        assert figures["startup_ms"] > 0 and figures["peak_rss_mb"] > 100, "a process that loaded the model"
        for length in figures["lengths"].values():
            assert 0 < length["first_audio_ms"]["p50"] <= length["total_ms"]["p50"] and length["rtf"] > 0
    applied = [figures["applied"] for figures in results["candidates"].values()]
    static, split = f"kokoro-v1.0.int8.decoder{STATIC_SUFFIX}", "kokoro-v1.0.int8.decoder.onnx"
    assert applied == [{"threads": 2, "graph": "ORT_ENABLE_ALL", "spinning": "1", "decoder": decoder}
                       for decoder in (static, split, static)], "each ran with its options"
    windowed, model_decoder, whole = ({count: length["parts"] for count, length in figures["lengths"].items()}
                                      for figures in results["candidates"].values())
    assert windowed["8"] > 1 and windowed["8"] >= windowed["3"], "8 words are rendered in windows"
    assert model_decoder == windowed, "the same windows, whichever decoder"
    assert set(whole.values()) == {1}
    decoders = results["decoders"]
    assert decoders["sentences"] == engine.QUICK_HELD_OUT and decoders["reference_words"] > 0
    assert [figures["decoder"] for figures in decoders["decoders"].values()] == [split, static]
    heard = [figures["wer"] for figures in decoders["decoders"].values()]
    # the static decoder is heard as the model's (197 sentences: within 0.01), here within 3 words
    assert all(heard[1][kind] <= heard[0][kind] + 3 / decoders["reference_words"] + 1e-3 for kind in heard[0]), heard
    shorter = results["shorter_first_chunk"]
    assert 0 < shorter["sentences_cut"] <= engine.QUICK_PHRASING_SENTENCES
    assert shorter["first_audio_ms"]["first_part"]["trials"] == shorter["sentences_cut"]
    assert shorter["pause_at_cut_ms"]["split"]["trials"] == shorter["sentences_cut"]
    assert 0 <= shorter["wer"]["split"] and shorter["wer"]["reference_words"] > 0
    rendering = results["rendering"]
    assert set(rendering["split"]) == {str(count) for count in engine.QUICK_WORD_COUNTS}
    assert all(0 < f["decoder_share"] < 1 for f in rendering["split"].values())
    seams = rendering["seams"]
    assert seams["sentences"] == engine.QUICK_PHRASING_SENTENCES and seams["windows"]["p50"] > 1
    assert seams["joins"] == seams["flux_excess_db"]["trials"] == seams["step_over_typical"]["trials"] > 0
    assert seams["reference_words"] > 0 and all(0 <= wer for wer in seams["wer"].values())
    # the recogniser hears the windows as it hears the whole render (50 sentences: 0.060 both), within 3 words
    assert seams["wer"]["windows"] <= seams["wer"]["whole"] + 3 / seams["reference_words"] + 1e-3, seams["wer"]
    assert [shape["shape"] for shape in seams["shapes"]] == ["server", "36 / 30 / 30"]
    assert seams["shapes"][0]["wer"] == seams["wer"]["windows"]
    assert all(0 < shape["distance_db"] < 20 and shape["first_part_ms"]["p50"] > 0 for shape in seams["shapes"])
    lead = seams["lead"]
    # speech starts within the lead kept, give or take a frame (50 sentences: max 160 ms of 150)
    assert lead["onset_ms"]["max"] <= lead["kept_ms"] + 25 < 300 <= lead["model_onset_ms"]["p50"]
    assert lead["frames_not_decoded"]["p50"] >= 10 and lead["model_wer"] >= 0
    # the recogniser hears the renders with the lead kept as it hears those with the model's, within 3 words
    assert seams["wer"]["whole"] <= lead["model_wer"] + 3 / seams["reference_words"] + 1e-3, (lead, seams["wer"])
    # in windows, the first speech is heard within the lead kept after the first part
    speech = seams["first_speech_ms"]["windows"]
    assert seams["first_part_ms"]["p50"] < speech["p50"] <= seams["first_part_ms"]["max"] + lead["kept_ms"] + 25
    held_out = rendering["lead"]
    assert held_out["sentences"] == engine.QUICK_HELD_OUT and held_out["reference_words"] > 0
    variants = held_out["variants"]
    assert list(variants) == list(bench_rendering.LEAD_VARIANTS)
    server, model_lead = variants["in windows, the rest decoded as context (the server)"], \
        variants["in windows, the model's silence"]
    # the first speech comes sooner with 150 ms kept than with the model's 430 ms, though the first
    # part decodes the cut silence too (~55 ms here)
    assert server["first_speech_ms"]["p50"] < model_lead["first_speech_ms"]["p50"]
    assert all(f["first_part_ms"]["p50"] < f["first_speech_ms"]["p50"] and 0 <= f["wer"] for f in variants.values())
    assert all(len(digest) == 64 for digest in rendering["digests"].values())
    report = (tmp_path / "engine.md").read_text()
    assert "| candidate |" in report and "pause at the cut" in report and "decoder's share" in report
    assert "| 36 / 30 / 30 |" in report, "the other window shapes are reported"
    assert "Leading silence kept by every request: 150 ms" in report and "| first speech" in report
    assert "| in windows, the rest not decoded |" in report
    assert "| static int8 (30 generator convolutions) |" in report, "the decoders, side by side"
