"""Fetching another model or voices file at image build time: kept only when its SHA-256 matches;
the engine then serves it and logs which model and execution provider it got."""

from __future__ import annotations

import functools
import hashlib
import logging
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tts_server.engine import KokoroEngine
from tts_server.model_files import MODEL_FILE_ENV, ensure_model
from voice_agent.cli import main as cli


@pytest.fixture(scope="module")
def file_server(tmp_path_factory):
    """A loopback HTTP server with a copy of the real model under another name."""
    directory = tmp_path_factory.mktemp("served")
    shutil.copyfile(ensure_model(), directory / "kokoro-other.onnx")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", directory
    server.shutdown()


def test_a_fetched_model_is_kept_only_when_its_digest_matches(file_server, tmp_path, monkeypatch, capsys):
    url, directory = file_server
    digest = hashlib.sha256((directory / "kokoro-other.onnx").read_bytes()).hexdigest()
    monkeypatch.setenv("VOICE_AGENT_CACHE", str(tmp_path))

    assert cli(["prepare-model", "--model-url", f"{url}/kokoro-other.onnx", "--model-sha256", "0" * 64]) == 1
    assert "expected " + "0" * 64 in capsys.readouterr().err
    assert not list(tmp_path.glob("kokoro-other*")), "a file with the wrong digest was kept"

    assert cli(["prepare-model", "--model-url", f"{url}/kokoro-other.onnx"]) == 1  # no digest, nothing fetched
    assert "needs --model-sha256" in capsys.readouterr().err

    assert cli(["prepare-model", "--model-url", f"{url}/kokoro-other.onnx", "--model-sha256", digest]) == 0
    fetched = tmp_path / "kokoro-other.onnx"
    assert fetched.read_bytes() == (directory / "kokoro-other.onnx").read_bytes()
    assert fetched.stat().st_mode & 0o777 == 0o644, "an image's server runs as another user than its build"

    assert cli(["prepare-model", "--voices-url", f"{url}/missing.bin", "--voices-sha256", digest]) == 1
    assert "404" in capsys.readouterr().err


def test_the_engine_serves_the_model_named_in_the_environment_and_logs_its_provider(
        file_server, monkeypatch, caplog, tmp_path):
    _, directory = file_server
    monkeypatch.setenv("VOICE_AGENT_CACHE", str(tmp_path))
    monkeypatch.setenv(MODEL_FILE_ENV, str(directory / "kokoro-other.onnx"))
    with caplog.at_level(logging.INFO, logger="tts_server.engine"):
        engine = KokoroEngine.load(threads=1, static_decoder=False)
    assert engine.provider == "CPUExecutionProvider"  # this machine's onnxruntime has no CUDA
    # Served with its durations added (it is the same export as the packaged model), so it times words.
    assert "engine: kokoro-other.timed.onnx on CPUExecutionProvider (available: " in caplog.text
    assert engine.timed and "word timings on" in caplog.text
    assert len(b"".join(engine.synthesize("Hello."))) > 24_000 * 2 * 0.2  # it speaks

    link = tmp_path / "served.onnx"  # as the image names the model it serves
    link.symlink_to(directory / "kokoro-other.onnx")
    monkeypatch.setenv(MODEL_FILE_ENV, str(link))
    with caplog.at_level(logging.INFO, logger="tts_server.engine"):
        assert KokoroEngine.load(threads=1, static_decoder=False).timed
    assert not (tmp_path / "served.timed.onnx").exists(), "the link is followed to the file it names"

    monkeypatch.setenv(MODEL_FILE_ENV, str(directory / "absent.onnx"))
    with pytest.raises(RuntimeError, match="VOICE_AGENT_MODEL_FILE=.*absent.onnx is not a file"):
        KokoroEngine.load(threads=1)
