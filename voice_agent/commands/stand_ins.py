"""``sagemaker-local`` and ``bedrock-local``: local stand-ins that speak the AWS services' wire protocols."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from tts_protocol import BIDI_PATH
from voice_agent.commands.options import add_server_options


def _sagemaker_local(args: argparse.Namespace) -> int:
    from tts_server.model_files import cache_dir
    from voice_agent.dev.local_tls import create_local_tls
    from voice_agent.dev.sagemaker_local import Faults, serve_stand_in

    tls = create_local_tls(Path(args.tls_dir) if args.tls_dir else cache_dir() / "sagemaker-local-tls")
    print(f"SageMaker stand-in: set SAGEMAKER_ENDPOINT_URL=https://127.0.0.1:{args.port} "
          f"SAGEMAKER_CA_BUNDLE={tls.ca_cert}", flush=True)
    faults = Faults(args.throttle_first, args.reset_after_parts, args.exit_after_parts)
    asyncio.run(serve_stand_in(args.container_url, args.host, args.port, tls, faults))
    return 0


def _bedrock_local(args: argparse.Namespace) -> int:
    from agent.llm.replay import load_recording
    from voice_agent.dev.bedrock_local import serve

    print(f"Bedrock stand-in: set BEDROCK_ENDPOINT_URL=http://{args.host}:{args.port}", flush=True)
    serve(load_recording(args.replay), args.host, args.port, args.replay_speed, throttle_first=args.throttle_first,
          fail_after=args.fail_after)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    from agent.recordings import packaged_recordings

    standin = commands.add_parser("sagemaker-local", help="a local stand-in for SageMaker's bidirectional "
                                                          "streaming API, in front of a TTS container")
    add_server_options(standin, 8443)
    standin.add_argument("--container-url", required=True,
                         help=f"the container's WebSocket, e.g. ws://127.0.0.1:8081{BIDI_PATH}")
    standin.add_argument("--tls-dir", help="where to write the test CA and server certificate "
                                           "(default: the cache directory)")
    standin.add_argument("--throttle-first", type=int, default=0,
                         help="answer the first N stream opens with HTTP 429 ThrottlingException (default: 0)")
    standin.add_argument("--reset-after-parts", type=int, help="reset the first stream (RST_STREAM) after N "
                                                               "response parts (default: never)")
    standin.add_argument("--exit-after-parts", type=int, help="exit, closing every connection, after N response "
                                                              "parts of the first stream (default: never)")
    standin.set_defaults(handler=_sagemaker_local)

    bedrock = commands.add_parser("bedrock-local", help="a local stand-in for Bedrock's ConverseStream that "
                                                        "streams a recording, for the real BedrockModel offline")
    add_server_options(bedrock, 8090)
    bedrock.add_argument("--replay", default="long",
                         help=f"the recording to stream: {', '.join(packaged_recordings())}, or a path (default: long)")
    bedrock.add_argument("--replay-speed", type=float, default=1.0, help="stream this many times faster than "
                                                                         "recorded (default: 1)")
    bedrock.add_argument("--throttle-first", type=int, default=0,
                         help="answer the first N requests with HTTP 429 ThrottlingException (default: 0)")
    bedrock.add_argument("--fail-after", type=int, help="end each stream after N events with a "
                                                        "modelStreamErrorException (default: never)")
    bedrock.set_defaults(handler=_bedrock_local)
