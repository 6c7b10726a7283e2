"""The local model's own process: llama.cpp generating SmolLM2-135M tokens for the agent.

Started by ``agent.llm.local`` as ``python -m agent.llm.local_worker``; never imported by the
agent. A native crash in llama.cpp (a CPU instruction the machine does not grant, a bad model file)
then kills this process only; the agent reports ``model_failed`` for the answer in flight and
starts a new worker for the next one.

Protocol, one JSON object per line. Standard input carries requests:
``{"type": "generate", "id", "chat", "max_tokens", "temperature", "seed", "repeat_penalty"}`` and
``{"type": "stop", "id"}``. Standard output carries ``{"type": "ready"}`` once the model is loaded,
then per request ``{"type": "token", "id", "text"}`` lines ending in one ``{"type": "done", "id"}``
or ``{"type": "error", "id", "message"}``. Requests are served one at a time, in order. The end of
standard input (the agent is gone, however it ended) ends this process at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import sys
import threading
import time
from typing import Any

from settings_table import configure_logging

log = logging.getLogger("agent.llm.local_worker")

MAX_QUEUED_REQUESTS = 8
"""Requests read ahead of the one being served; the agent sends one at a time."""


class _Requests:
    """Standard input read on its own thread, so that a stop arrives while tokens are generated."""

    def __init__(self) -> None:
        self.pending: queue.Queue[dict[str, Any]] = queue.Queue(MAX_QUEUED_REQUESTS)
        self._stopped: set[int] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, name="requests", daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin.buffer:
            try:
                message = json.loads(line)
            except ValueError:
                log.error("ignored a line that is not JSON: %r", line[:200])
                continue
            if message.get("type") == "stop":
                with self._lock:
                    self._stopped.add(message.get("id"))
            else:
                self.pending.put(message)
        os._exit(0)  # the agent closed our input: it has gone, and so do we

    def stopped(self, request_id: int) -> bool:
        with self._lock:
            return request_id in self._stopped

    def forget(self, request_id: int) -> None:
        with self._lock:
            self._stopped.discard(request_id)


def _write(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
    sys.stdout.buffer.flush()


def _serve(llama: Any, requests: _Requests) -> None:
    while True:
        request = requests.pending.get()
        request_id = request.get("id")
        try:
            parts = llama.create_chat_completion(
                request["chat"], stream=True, max_tokens=request["max_tokens"], temperature=request["temperature"],
                seed=request["seed"], repeat_penalty=request["repeat_penalty"])
            for part in parts:
                if requests.stopped(request_id):
                    break
                text = part["choices"][0]["delta"].get("content")
                if text:
                    _write({"type": "token", "id": request_id, "text": text})
            _write({"type": "done", "id": request_id})
        except Exception as exc:  # reported to the agent, which ends the answer with model_failed
            log.exception("generation failed")
            _write({"type": "error", "id": request_id, "message": f"{type(exc).__name__}: {exc}"})
        requests.forget(request_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    configure_logging()
    requests = _Requests()
    started = time.perf_counter()
    from llama_cpp import Llama

    llama = Llama(model_path=args.model_path, n_ctx=2048, n_threads=args.threads, seed=args.seed, verbose=False)
    log.info("pid %d loaded %s in %.2f s", os.getpid(), args.model_path, time.perf_counter() - started)
    _write({"type": "ready"})
    try:
        _serve(llama, requests)
    finally:
        llama.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
