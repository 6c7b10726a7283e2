"""``voice-agent record``: capture a model's stream into the replay format."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from pathlib import Path


def _record(args: argparse.Namespace) -> int:
    from agent.config import AgentSettings
    from agent.llm.recorder import record
    from agent.llm.select import build_model, model_kind

    settings = AgentSettings.from_env()
    if args.model:
        settings = dataclasses.replace(settings, model=args.model)
    kind = model_kind(settings)
    model_id = settings.bedrock_model_id if kind == "bedrock" else kind
    count = asyncio.run(record(build_model(settings), args.prompt, Path(args.out),
                               system_prompt=settings.system_prompt, model_id=model_id))
    print(f"recorded {count} events from the {kind} model to {args.out}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    from agent.config import MODEL_KINDS

    record = commands.add_parser("record", help="capture a model's stream into the replay format")
    record.add_argument("--prompt", required=True)
    record.add_argument("--out", required=True, help="the JSONL file to write")
    record.add_argument("--model", choices=tuple(kind for kind in MODEL_KINDS if kind != "replay"),
                        help="which model (default: $VOICE_AGENT_MODEL or auto)")
    record.set_defaults(handler=_record)
