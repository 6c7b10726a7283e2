"""Options several commands share."""

from __future__ import annotations

import argparse


def add_server_options(command: argparse.ArgumentParser, port: int) -> None:
    command.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    command.add_argument("--port", type=int, default=port, help=f"port to listen on (default: {port})")
