"""The TTS container's command line, ``python -m tts_server``: ``serve`` (what SageMaker runs as
``docker run IMAGE serve``: the server on 0.0.0.0:8080) and ``prepare-model`` (run at image build
time). It imports nothing of the agent, so the TTS image carries only this package and the shared
protocol. The workstation's ``voice-agent`` adds the same commands (and ``serve-tts``, the server
on loopback) from here."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from settings_table import configure_logging, described, flag
from tts_server.settings import DEFAULT_VOICE, ServerSettings, lead

SERVER_OPTIONS = {"voices_path": ("--voices", Path), "default_voice": ("--default-voice", str),
                  "threads": ("--threads", int), "max_sessions": ("--max-sessions", int),
                  "idle_timeout": ("--idle-timeout", float), "windows": ("--windows", flag),
                  "lead_ms": ("--lead-ms", lead), "static_decoder": ("--static-decoder", flag)}
PORT = 8080
"""The port SageMaker sends the container's traffic to."""


def tts_settings(args: argparse.Namespace) -> ServerSettings:
    """The TTS server's settings: the environment's (as SageMaker configures the container), with
    the command's options over them."""
    overrides = {field: getattr(args, field) for field in SERVER_OPTIONS if getattr(args, field) is not None}
    return dataclasses.replace(ServerSettings.from_env(), **overrides)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from tts_server.app import create_app
    from tts_server.settings import MAX_FRAME_BYTES

    uvicorn.run(create_app(tts_settings(args)), host=args.host, port=args.port, log_level="info",
                ws_max_size=MAX_FRAME_BYTES, access_log=False)
    return 0


def add_serve_command(commands: argparse._SubParsersAction, name: str, help_text: str, host: str) -> None:
    """``name``: run the TTS server, binding ``host`` unless ``--host`` says otherwise."""
    command = commands.add_parser(name, help=help_text)
    command.add_argument("--host", default=host, help=f"address to bind (default: {host})")
    command.add_argument("--port", type=int, default=PORT, help=f"port to listen on (default: {PORT})")
    for field, (option, kind) in SERVER_OPTIONS.items():
        command.add_argument(option, dest=field, type=kind, help=described(ServerSettings, field))
    command.set_defaults(handler=_serve)


def _prepare_model(args: argparse.Namespace) -> int:
    from tts_server.engine import KokoroEngine, load_voices
    from tts_server.model_files import (
        ModelFileError,
        NoDurations,
        ensure_model,
        fetch_verified,
        split_at_decoder,
        with_durations,
    )

    try:
        timed = with_durations(ensure_model(progress=print), progress=print)
        print(f"model ready: {timed}")
        parts = ", ".join(path.name for path in split_at_decoder(timed))
        print(f"split at its decoder (to render in windows): {parts}")
        if ServerSettings.from_env().static_decoder and not (args.model_url or args.voices_url):
            # (a call that fetches another file is the image build's later step: the first prepared it)
            engine = KokoroEngine(timed, load_voices(), default_voice=DEFAULT_VOICE, static_decoder=True)
            print(f"decoder: {engine.decoder_path.name if engine.decoder_path else 'not split'}")
        for kind in ("model", "voices"):
            url, digest = getattr(args, f"{kind}_url"), getattr(args, f"{kind}_sha256")
            if url:
                if not digest:
                    raise ModelFileError(f"--{kind}-url needs --{kind}-sha256: nothing is kept unverified")
                fetched = fetch_verified(url, digest, progress=print)
                print(f"{kind} ready: {fetched}")
                if kind == "model":
                    try:
                        split_at_decoder(with_durations(fetched, progress=print))
                    except NoDurations as exc:
                        print(f"prepare-model: {exc}")
    except (ModelFileError, OSError) as exc:
        print(f"prepare-model: {exc}", file=sys.stderr)
        return 1
    return 0


def add_prepare_model_command(commands: argparse._SubParsersAction) -> None:
    prepare = commands.add_parser("prepare-model",
                                  help="assemble and verify the Kokoro model in the cache and prepare its decoder")
    prepare.add_argument("--model-url", help="also fetch another Kokoro ONNX model (the GPU image's full-precision "
                                             "kokoro-v1.0.onnx) into the cache; serve it with $VOICE_AGENT_MODEL_FILE")
    prepare.add_argument("--model-sha256", help="the SHA-256 the fetched model must have")
    prepare.add_argument("--voices-url", help="also fetch a voices file (e.g. voices-v1.0.bin); serve it with "
                                              "$VOICE_AGENT_VOICES")
    prepare.add_argument("--voices-sha256", help="the SHA-256 the fetched voices file must have")
    prepare.set_defaults(handler=_prepare_model)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tts_server", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    add_serve_command(commands, "serve", "the container entry point SageMaker runs: the TTS server", "0.0.0.0")
    add_prepare_model_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging()
    return args.handler(args)
