"""``serve-tts`` / ``serve`` (the TTS container app; ``serve`` is what SageMaker runs) and
``serve-agent`` (the agent). Options override the environment's settings."""

from __future__ import annotations

import argparse
import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from voice_agent.commands.options import add_server_options, described

if TYPE_CHECKING:
    from tts_server.settings import ServerSettings

SERVER_OPTIONS = {"voices_path": ("--voices", Path), "default_voice": ("--default-voice", str),
                  "threads": ("--threads", int), "max_sessions": ("--max-sessions", int),
                  "idle_timeout": ("--idle-timeout", float)}


def tts_settings(args: argparse.Namespace) -> ServerSettings:
    """The TTS server's settings: the environment's (as SageMaker configures the container), with
    the command's options over them."""
    from tts_server.settings import ServerSettings

    overrides = {field: getattr(args, field) for field in SERVER_OPTIONS if getattr(args, field) is not None}
    return dataclasses.replace(ServerSettings.from_env(), **overrides)


def _serve_tts(args: argparse.Namespace) -> int:
    import uvicorn

    from tts_server.app import create_app
    from tts_server.settings import MAX_FRAME_BYTES

    uvicorn.run(create_app(tts_settings(args)), host=args.host, port=args.port, log_level="info",
                ws_max_size=MAX_FRAME_BYTES, access_log=False)
    return 0


def _serve_agent(args: argparse.Namespace) -> int:
    from agent.config import AgentSettings
    from agent.entrypoint import serve

    # The runtime logs through its own handler; without this every line would appear twice.
    logging.getLogger("bedrock_agentcore").propagate = False
    overrides = {"tts_url": args.tts_url, "replay": args.replay, "replay_speed": args.replay_speed,
                 "model": "replay" if args.replay else args.model}
    settings = dataclasses.replace(AgentSettings.from_env(), **{k: v for k, v in overrides.items() if v is not None})
    serve(settings, host=args.host, port=args.port)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    from agent.config import MODEL_KINDS, AgentSettings
    from agent.recordings import packaged_recordings
    from tts_server.settings import ServerSettings

    for name, help_text, host in (
            ("serve-tts", "run the Kokoro TTS server (the SageMaker container app)", "127.0.0.1"),
            ("serve", "the container entry point SageMaker runs: the TTS server on 0.0.0.0:8080", "0.0.0.0")):
        command = commands.add_parser(name, help=help_text)
        add_server_options(command, 8080)
        for field, (option, kind) in SERVER_OPTIONS.items():
            command.add_argument(option, dest=field, type=kind, help=described(ServerSettings, field))
        command.set_defaults(handler=_serve_tts, host=host)

    agent = commands.add_parser("serve-agent", help="run the agent (BedrockAgentCoreApp)")
    add_server_options(agent, 8080)
    agent.add_argument("--tts-url", help=described(AgentSettings, "tts_url"))
    agent.add_argument("--model", choices=MODEL_KINDS, help=described(AgentSettings, "model"))
    agent.add_argument("--replay", help=f"answer with this recording (implies --model replay): "
                                        f"{', '.join(packaged_recordings())}, or a path")
    agent.add_argument("--replay-speed", type=float, help=described(AgentSettings, "replay_speed"))
    agent.set_defaults(handler=_serve_agent)
