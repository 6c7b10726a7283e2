"""The deployed TTS image's own voices: a voices file fetched when the image is built (here over
loopback HTTP, in the format of Kokoro v1.0's ``voices-v1.0.bin``), kept only when its SHA-256
matches, and served with the default voice the build names."""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from tts_server.engine import STYLE_DIM, load_voices
from voice_agent.check import check
from voice_agent.dev import containers
from voice_agent.dev.containers import TTS_IMAGE

TAG = f"{TTS_IMAGE}:voices-test"


@pytest.fixture(scope="module")
def voices_file(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """A voices file served on loopback (two packaged packs under English voice names): URL, SHA-256."""
    directory = tmp_path_factory.mktemp("voices")
    packaged = load_voices(None)
    packs = {"af_heart": packaged["jf_gongitsune"], "am_test": packaged["jm_kumo"]}
    path = directory / "voices-test.bin"
    with open(path, "wb") as file:  # a file object: numpy would add ".npz" to a name
        np.savez(file, **{name: pack.reshape(-1, 1, STYLE_DIM) for name, pack in packs.items()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(SimpleHTTPRequestHandler,
                                                                     directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{path.name}", hashlib.sha256(path.read_bytes()).hexdigest()
    server.shutdown()


def build_line(tag: str, **arguments: str) -> containers.DockerCommand:
    """The README's TTS build line, tagged ``tag``, with these build arguments."""
    line = containers.readme_command("build", TTS_IMAGE).replaced(TTS_IMAGE, tag)
    options = [word for name, value in arguments.items() for word in ("--build-arg", f"{name}={value}")]
    return containers.DockerCommand(("docker", *line.with_options(*options)))


async def test_a_voices_file_whose_digest_matches_is_baked_in_and_its_default_voice_served(
        engine, base, images, voices_file, start_container, artifacts):
    url, digest = voices_file
    line = build_line(TAG, VOICES_URL=url, VOICES_SHA256=digest, DEFAULT_VOICE="af_heart")
    containers.build(engine, line, base, artifacts / "build-voices-test.log")
    run = containers.readme_command("run", TTS_IMAGE).replaced(TTS_IMAGE, TAG).replaced("8081", "8084")
    tts = start_container(run, "test-tts-voices", 8084)
    assert "2 voices (default af_heart)" in "\n".join(tts.server.log_tail(40))
    result = await check(tts.server.ws_url, timeout=60)
    assert result.ok, result.report()
    english = await check(tts.server.ws_url, voice="am_test", timeout=60)
    assert english.ok, english.report()


def test_a_voices_file_with_another_digest_fails_the_build_and_leaves_no_image(engine, base, images, voices_file,
                                                                              artifacts):
    url, _ = voices_file
    tag = f"{TTS_IMAGE}:voices-mismatch"
    engine.docker("rmi", "--force", tag, check=False)
    with pytest.raises(RuntimeError, match="expected " + "0" * 64):
        containers.build(engine, build_line(tag, VOICES_URL=url, VOICES_SHA256="0" * 64), base,
                         artifacts / "build-voices-mismatch.log")
    assert not engine.image_exists(tag)
