"""Seeded fuzz inputs: mutations of valid messages, as mutation fuzzers make them, and hand-made bad
inputs. Pure: no I/O, the same seed gives the same inputs.

A :class:`Mutator` starts from a valid message and applies one to three mutations, either to its
JSON (a field removed, retyped, given an extreme value, renamed; an unknown field; the object
wrapped or nested deep) or to its bytes (bits flipped, bytes inserted, deleted, repeated; the
message truncated, or spliced with another). The fuzzers decide what each input should get from
the protocol modules' own parsers, so the oracle is the specification, not a copy of it."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

EXTREME_VALUES: tuple[Any, ...] = (None, True, False, 0, -1, 2 ** 63, -2 ** 63, 1e308, -1e-308, float("nan"),
                                   float("inf"), "", " ", "x" * 300, "\u0000", "\ud800", "😀", "../../etc/passwd",
                                   [], [1, "a"], {}, {"a": {"b": []}})
KEY_SPELLINGS: tuple[Callable[[str], str], ...] = (str.upper, str.title, lambda key: key + "_", lambda key: " " + key,
                                                   lambda key: key.replace("_", "-"))


class Mutator:
    """``mutator()``: one input, ``str`` (a text frame) or ``bytes`` (a binary frame or a body),
    mutated from one of ``seeds`` (valid messages as JSON objects). ``max_bytes`` bounds an input's
    size (a leg's message limit is tested apart)."""

    def __init__(self, seeds: list[dict[str, Any]], rng: random.Random, max_bytes: int) -> None:
        self.seeds, self.rng, self.max_bytes = seeds, rng, max_bytes
        self._json_mutations = (self._drop_field, self._retype_field, self._rename_field, self._add_field,
                                self._wrap, self._nest)
        self._byte_mutations = (self._flip_bits, self._insert, self._delete, self._repeat, self._truncate,
                                self._splice)

    def __call__(self) -> str | bytes:
        message: Any = dict(self.rng.choice(self.seeds))
        for _ in range(self.rng.randint(1, 3)):
            if isinstance(message, (dict, list)) and self.rng.random() < 0.6:
                message = self.rng.choice(self._json_mutations)(message)
            else:
                data = message if isinstance(message, bytes) else _serialise(message)
                message = self.rng.choice(self._byte_mutations)(data)[: self.max_bytes]
        if isinstance(message, (dict, list)):
            message = _serialise(message)[: self.max_bytes]
        if self.rng.random() < 0.7:
            return message.decode("utf-8") if _is_utf8(message) else message
        return message

    # JSON mutations: the message stays an object (or becomes an array) ------------------------------

    def _field(self, message: Any) -> str | None:
        return self.rng.choice(list(message)) if isinstance(message, dict) and message else None

    def _drop_field(self, message: Any) -> Any:
        if (field := self._field(message)) is not None:
            message = {key: value for key, value in message.items() if key != field}
        return message

    def _retype_field(self, message: Any) -> Any:
        if (field := self._field(message)) is not None:
            message = {**message, field: self.rng.choice(EXTREME_VALUES)}
        return message

    def _rename_field(self, message: Any) -> Any:
        if (field := self._field(message)) is not None:
            spelled = self.rng.choice(KEY_SPELLINGS)(field)
            message = {spelled if key == field else key: value for key, value in message.items()}
        return message

    def _add_field(self, message: Any) -> Any:
        if isinstance(message, dict):
            message = {**message, self.rng.choice(["extra", "__proto__", "constructor", "Type", "played"]):
                       self.rng.choice(EXTREME_VALUES)}
        return message

    def _wrap(self, message: Any) -> Any:
        return [message] if self.rng.random() < 0.5 else {"message": message}

    def _nest(self, message: Any) -> Any:
        for _ in range(self.rng.randrange(2, 200)):
            message = {"type": message} if self.rng.random() < 0.5 else [message]
        return message

    # Byte mutations: the message usually stops being JSON --------------------------------------------

    def _span(self, data: bytes) -> tuple[int, int]:
        start = self.rng.randrange(len(data) + 1)
        return start, min(len(data), start + self.rng.randint(1, 16))

    def _flip_bits(self, data: bytes) -> bytes:
        buffer = bytearray(data)
        for _ in range(self.rng.randint(1, 8)):
            if buffer:
                buffer[self.rng.randrange(len(buffer))] ^= 1 << self.rng.randrange(8)
        return bytes(buffer)

    def _insert(self, data: bytes) -> bytes:
        at = self.rng.randrange(len(data) + 1)
        inserted = self.rng.choice([bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 8))),
                                    b'"', b"\\", b"{", b"}", b"[", b",", b":", b"\x00", b"\xff", b"\\u0000"])
        return data[:at] + inserted + data[at:]

    def _delete(self, data: bytes) -> bytes:
        start, end = self._span(data)
        return data[:start] + data[end:]

    def _repeat(self, data: bytes) -> bytes:
        start, end = self._span(data)
        return data[:end] + data[start:end] * self.rng.randint(1, 64) + data[end:]

    def _truncate(self, data: bytes) -> bytes:
        return data[: self.rng.randrange(len(data) + 1)]

    def _splice(self, data: bytes) -> bytes:
        other = _serialise(self.rng.choice(self.seeds))
        return data[: self.rng.randrange(len(data) + 1)] + other[self.rng.randrange(len(other) + 1):]


def _serialise(message: Any) -> bytes:
    return json.dumps(message, allow_nan=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def random_input(rng: random.Random) -> str | bytes:
    """Bytes or text with no message in them."""
    size = rng.randint(1, 128)
    if rng.random() < 0.5:
        return bytes(rng.randrange(256) for _ in range(size))
    return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x3000)])) for _ in range(size))
