"""``voice-agent``: serve the TTS container or the agent, ask a question, run the offline demo, and
the rest; one module per command under ``voice_agent.commands``."""

from __future__ import annotations

import argparse
import sys

from settings_table import configure_logging
from voice_agent.commands import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="voice-agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    from agent.processes import exit_with_parent

    args = build_parser().parse_args(argv)
    configure_logging()
    exit_with_parent()
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
