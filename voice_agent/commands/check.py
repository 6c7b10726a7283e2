"""``voice-agent check``: after a deploy, prove the TTS endpoint can synthesize, not just answer ``/ping``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from tts_protocol import BIDI_PATH


def _check(args: argparse.Namespace) -> int:
    from agent.transports.sagemaker import SageMakerConnector
    from voice_agent.check import check

    if args.endpoint:
        if not args.region:
            print("error: --region (or AWS_REGION) is needed with --endpoint", file=sys.stderr)
            return 2
        target: Any = SageMakerConnector(args.endpoint, args.region, endpoint_uri=args.endpoint_url,
                                         ca_file=Path(args.ca_bundle) if args.ca_bundle else None)
        where = f"SageMaker endpoint {args.endpoint} ({args.region})"
    else:
        target, where = args.url, args.url
    print(f"checking {where}: one sentence through a bidirectional session", flush=True)
    result = asyncio.run(check(target, text=args.text, voice=args.voice, timeout=args.timeout))
    print(json.dumps({"ok": result.ok, "checks": result.checks, "stats": result.stats}) if args.json
          else result.report())
    return 0 if result.ok else 1


def register(commands: argparse._SubParsersAction) -> None:
    from voice_agent.check import DEFAULT_TEXT, DEFAULT_TIMEOUT

    checker = commands.add_parser(
        "check", help="after a deploy: prove the TTS endpoint can synthesize, not just answer /ping",
        description="Open a real bidirectional session, synthesize one sentence, and verify the audio "
                    "(non-empty, whole samples, not silence, a plausible duration) and synthesis_complete. "
                    "Exit status 0 when the endpoint can speak, 1 when it cannot.")
    target = checker.add_mutually_exclusive_group(required=True)
    target.add_argument("--endpoint", help="the SageMaker endpoint name (InvokeEndpointWithBidirectionalStream, "
                                           "boto3's credentials)")
    target.add_argument("--url", help="a container's WebSocket instead, e.g. "
                                      f"ws://127.0.0.1:8081{BIDI_PATH}")
    checker.add_argument("--region", default=os.environ.get("AWS_REGION"),
                         help="the endpoint's region (default: $AWS_REGION)")
    checker.add_argument("--endpoint-url", help="override https://runtime.sagemaker.REGION.amazonaws.com:8443 "
                                                "(e.g. the local stand-in)")
    checker.add_argument("--ca-bundle", help="a private CA to trust for --endpoint-url (the stand-in's)")
    checker.add_argument("--text", default=DEFAULT_TEXT,
                         help="the sentence to synthesize")
    checker.add_argument("--voice", help="voice name (default: the container's)")
    checker.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                         help=f"seconds to wait for audio (default: {DEFAULT_TIMEOUT:.0f})")
    checker.add_argument("--json", action="store_true", help="print the result as one JSON object")
    checker.set_defaults(handler=_check)
