"""``voice-agent prepare-model``: assemble and verify the Kokoro model in the cache, add its
durations output (word timings), and fetch others."""

from __future__ import annotations

import argparse
import sys


def _prepare_model(args: argparse.Namespace) -> int:
    from tts_server.model_files import ModelFileError, NoDurations, ensure_model, fetch_verified, with_durations

    try:
        print(f"model ready: {with_durations(ensure_model(progress=print), progress=print)}")
        for kind in ("model", "voices"):
            url, digest = getattr(args, f"{kind}_url"), getattr(args, f"{kind}_sha256")
            if url:
                if not digest:
                    raise ModelFileError(f"--{kind}-url needs --{kind}-sha256: nothing is kept unverified")
                fetched = fetch_verified(url, digest, progress=print)
                print(f"{kind} ready: {fetched}")
                if kind == "model":
                    try:
                        with_durations(fetched, progress=print)
                    except NoDurations as exc:
                        print(f"prepare-model: {exc}")
    except (ModelFileError, OSError) as exc:
        print(f"prepare-model: {exc}", file=sys.stderr)
        return 1
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    prepare = commands.add_parser("prepare-model", help="assemble and verify the Kokoro model in the cache")
    prepare.add_argument("--model-url", help="also fetch another Kokoro ONNX model (the GPU image's full-precision "
                                             "kokoro-v1.0.onnx) into the cache; serve it with $VOICE_AGENT_MODEL_FILE")
    prepare.add_argument("--model-sha256", help="the SHA-256 the fetched model must have")
    prepare.add_argument("--voices-url", help="also fetch a voices file (e.g. voices-v1.0.bin); serve it with "
                                              "$VOICE_AGENT_VOICES")
    prepare.add_argument("--voices-sha256", help="the SHA-256 the fetched voices file must have")
    prepare.set_defaults(handler=_prepare_model)
