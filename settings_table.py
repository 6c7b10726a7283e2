"""Settings read from the environment, each declared once: its field, its variable, its default,
how the text is parsed, and what it means. ``agent.config`` and ``tts_server.settings`` declare
theirs with :func:`setting`; :func:`from_env` reads them, :func:`table` lists them (the
configuration docs are generated from it)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class SettingError(ValueError):
    """A variable holds a value its setting cannot take; the message names the variable."""


def setting(env: str, default: Any, doc: str, parse: Callable[[str], Any] = str) -> Any:
    """A dataclass field read from ``env``; an unset or empty variable means ``default``."""
    return dataclasses.field(default=default, metadata={"env": env, "doc": doc, "parse": parse})


def at_least(minimum: float, parse: Callable[[str], Any] = int) -> Callable[[str], Any]:
    """A parser for numbers of at least ``minimum``."""
    return _bounded(parse, lambda value: value >= minimum, f"at least {minimum}")


def above(minimum: float, parse: Callable[[str], Any] = float) -> Callable[[str], Any]:
    """A parser for numbers greater than ``minimum``."""
    return _bounded(parse, lambda value: value > minimum, f"greater than {minimum}")


def _bounded(parse: Callable[[str], Any], ok: Callable[[Any], bool], wording: str) -> Callable[[str], Any]:
    def checked(text: str) -> Any:
        value = parse(text)
        if not ok(value):
            raise ValueError(f"must be {wording}")
        return value

    return checked


def flag(text: str) -> bool:
    """``1`` or ``0`` (also true/false, yes/no, on/off)."""
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not 1 or 0")


def from_env(cls: type[T], environ: Mapping[str, str] | None = None) -> T:
    """An instance of the settings dataclass ``cls`` with every declared variable applied."""
    environ = os.environ if environ is None else environ
    values = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = field.metadata.get("env")
        text = environ.get(name, "") if name else ""
        if text.strip():
            try:
                values[field.name] = field.metadata["parse"](text)
            except ValueError as exc:
                raise SettingError(f"{name}={text!r}: {exc}") from None
    return cls(**values)


def table(cls: type) -> list[tuple[str, str, Any, str]]:
    """(variable, field, default, meaning) of every setting of ``cls``, in declaration order."""
    return [(field.metadata["env"], field.name, field.default, field.metadata["doc"])
            for field in dataclasses.fields(cls) if "env" in field.metadata]


def described(cls: type, field: str) -> str:
    """A setting's meaning and variable, from its declaration, for a command-line option's help."""
    for variable, name, default, doc in table(cls):
        if name == field:
            shown = "unset" if default is None else default
            return f"{doc} (default: ${variable}, else {shown})"
    raise KeyError(field)


def configure_logging() -> None:
    """Log lines as ``time LEVEL logger: message`` at ``$VOICE_AGENT_LOG_LEVEL`` (default INFO)."""
    logging.basicConfig(level=os.environ.get("VOICE_AGENT_LOG_LEVEL", "INFO").upper(), format=LOG_FORMAT)
