"""Options several commands share."""

from __future__ import annotations

import argparse

from settings_table import table


def add_server_options(command: argparse.ArgumentParser, port: int) -> None:
    command.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    command.add_argument("--port", type=int, default=port, help=f"port to listen on (default: {port})")


def described(settings: type, field: str) -> str:
    """A setting's meaning and variable, from its declaration, for an option's help."""
    for variable, name, default, doc in table(settings):
        if name == field:
            shown = "unset" if default is None else default
            return f"{doc} (default: ${variable}, else {shown})"
    raise KeyError(field)
