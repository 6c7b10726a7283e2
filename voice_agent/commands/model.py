"""``voice-agent prepare-model``: assemble and verify the Kokoro model in the cache, add its
durations output (word timings), and fetch others (the TTS container's own command, ``tts_server.cli``)."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    from tts_server.cli import add_prepare_model_command

    add_prepare_model_command(commands)
