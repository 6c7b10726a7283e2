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
import sys
import threading
import time
from typing import Any, TextIO

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

    def stop(self) -> None:
        """Stop playing at once (the listener interrupted)."""
        self._failed = self._failed or InterruptedError("stopped")
        self._process.kill()
        self._process.wait()

    def close(self) -> int:
        """Let the player finish; its exit status."""
        self._chunks.put(None)
        self._thread.join(CLOSE_TIMEOUT)
        try:
            return self._process.wait(CLOSE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            return self._process.wait()


class PlaybackClock:
    """Where a listener is in an answer's audio, in milliseconds of it, as a player plays it: the
    playhead starts with the first audio handed to the player, moves in real time, and waits at
    the end of the audio received until more arrives (an underrun), as a player does (its own
    buffering aside)."""

    def __init__(self) -> None:
        self.started_at: float | None = None
        self._position_ms = 0.0
        self._at = 0.0
        self._received_ms = 0.0
        self._stopped = False

    def start(self) -> None:
        if self.started_at is None:
            self.started_at = self._at = time.monotonic()

    def received(self, total_ms: float) -> None:
        """The audio received so far is ``total_ms`` long."""
        self._advance()
        self._received_ms = max(self._received_ms, total_ms)

    def played_ms(self) -> float:
        self._advance()
        return round(self._position_ms, 1)

    def stop(self) -> float:
        """The listener stopped: the playhead no longer moves. Returns where it is."""
        self._advance()
        self._stopped = True
        return round(self._position_ms, 1)

    def _advance(self) -> None:
        if self.started_at is None or self._stopped:
            return
        now = time.monotonic()
        self._position_ms = min(self._received_ms, self._position_ms + (now - self._at) * 1000)
        self._at = now


class Captions:
    """Prints each word of an answer as it is heard on ``clock``: :meth:`add` words as their
    ``words`` events arrive (times on the answer's audio); a thread prints each once the playhead
    reaches its start. :meth:`close` lets it finish, :meth:`stop` ends it at once."""

    POLL = 0.02
    """Seconds between looks at the playhead (a caption is at most this late)."""

    def __init__(self, clock: PlaybackClock, out: TextIO = sys.stdout) -> None:
        self._clock = clock
        self._out = out
        self._words: list[dict[str, Any]] = []
        self._closing = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._print, name="captions", daemon=True)
        self._thread.start()

    def add(self, words: list[dict[str, Any]]) -> None:
        with self._lock:
            self._words += words

    def close(self) -> None:
        """Print the words still to come, each at its time, then stop."""
        self._closing = True
        last = self._words[-1]["end_ms"] / 1000 if self._words else 0.0
        self._thread.join(timeout=last + CLOSE_TIMEOUT)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=CLOSE_TIMEOUT)

    def _print(self) -> None:
        printed = 0
        while not self._stop.wait(self.POLL):
            played = self._clock.played_ms()
            with self._lock:
                due = [word["word"] for word in self._words[printed:] if word["start_ms"] <= played]
                left = len(self._words) - printed - len(due)
            for word in due:
                print(word, end=" ", file=self._out, flush=True)
            printed += len(due)
            if self._closing and not left:
                return
