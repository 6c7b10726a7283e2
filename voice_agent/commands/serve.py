"""``serve-tts`` / ``serve`` (the TTS container app, from ``tts_server.cli``; ``serve`` is what
SageMaker runs) and ``serve-agent`` (the agent). Options override the environment's settings."""

from __future__ import annotations

import argparse
import dataclasses

from settings_table import described
from voice_agent.commands.options import add_server_options


def _serve_agent(args: argparse.Namespace) -> int:
    from agent.config import AgentSettings
    from agent.entrypoint import serve

    overrides = {"tts_url": args.tts_url, "replay": args.replay, "replay_speed": args.replay_speed,
                 "model": "replay" if args.replay else args.model}
    settings = dataclasses.replace(AgentSettings.from_env(), **{k: v for k, v in overrides.items() if v is not None})
    serve(settings, host=args.host, port=args.port)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    from agent.config import MODEL_KINDS, AgentSettings
    from agent.recordings import packaged_recordings
    from tts_server.cli import add_serve_command

    add_serve_command(commands, "serve-tts", "run the Kokoro TTS server (the SageMaker container app)", "127.0.0.1")
    add_serve_command(commands, "serve", "the container entry point SageMaker runs: the TTS server on 0.0.0.0:8080",
                      "0.0.0.0")

    agent = commands.add_parser("serve-agent", help="run the agent (BedrockAgentCoreApp)")
    add_server_options(agent, 8080)
    agent.add_argument("--tts-url", help=described(AgentSettings, "tts_url"))
    agent.add_argument("--model", choices=MODEL_KINDS, help=described(AgentSettings, "model"))
    agent.add_argument("--replay", help=f"answer with this recording (implies --model replay): "
                                        f"{', '.join(packaged_recordings())}, or a path")
    agent.add_argument("--replay-speed", type=float, help=described(AgentSettings, "replay_speed"))
    agent.set_defaults(handler=_serve_agent)
