"""Play an answer through the speakers while it streams, with whichever player the machine has.

The audio is piped to the player's standard input as it arrives, so playback starts with the first
chunk. Players tried, in order: ``ffplay`` (FFmpeg; every format), ``paplay`` (PulseAudio/PipeWire)
and ``aplay`` (ALSA), the last two for raw ``pcm16`` and ``wav`` only. ``--player CMD`` names any
other command that reads the stream from standard input.
"""

from __future__ import annotations

import logging
import queue
import shlex
import shutil
import subprocess
import threading

import tts_protocol

log = logging.getLogger(__name__)

MAX_QUEUED_CHUNKS = 1024
"""Chunks waiting for the player; beyond this the caller waits for it (the agent then waits too)."""
CLOSE_TIMEOUT = 120.0
"""Seconds to let the player finish what it was given."""


def player_command(fmt: str, sample_rate: int = tts_protocol.SAMPLE_RATE) -> list[str] | None:
    """The command line that plays ``fmt`` from standard input here, or None when nothing can."""
    raw = fmt == tts_protocol.FORMAT_PCM16
    if shutil.which("ffplay"):
        source = ["-f", "s16le", "-ar", str(sample_rate), "-ch_layout", "mono"] if raw else []
        return ["ffplay", "-nodisp", "-autoexit", "-loglevel", "error", *source, "-i", "pipe:0"]
    if fmt not in (tts_protocol.FORMAT_PCM16, "wav"):
        return None
    if shutil.which("paplay"):
        return ["paplay", *(["--raw", "--format=s16le", f"--rate={sample_rate}", "--channels=1"] if raw else [])]
    if shutil.which("aplay"):
        return ["aplay", "-q", *(["-t", "raw", "-f", "S16_LE", "-r", str(sample_rate), "-c", "1"] if raw else [])]
    return None


class Player:
    """Feeds a player process from a thread, so a player reading at real-time pace never stalls the
    caller's event loop."""

    def __init__(self, command: list[str] | str) -> None:
        argv = shlex.split(command) if isinstance(command, str) else command
        self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        self._chunks: queue.Queue[bytes | None] = queue.Queue(MAX_QUEUED_CHUNKS)
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._feed, name="player", daemon=True)
        self._thread.start()

    def _feed(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            while (chunk := self._chunks.get()) is not None:
                stdin.write(chunk)
                stdin.flush()
        except OSError as exc:  # the player quit (closed window, missing device): say so once
            self._failed = exc
            log.warning("the audio player stopped: %s", exc)
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def write(self, data: bytes) -> None:
        if self._failed is None:
            self._chunks.put(data)

    def close(self) -> int:
        """Let the player finish; its exit status."""
        self._chunks.put(None)
        self._thread.join(CLOSE_TIMEOUT)
        try:
            return self._process.wait(CLOSE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            return self._process.wait()
