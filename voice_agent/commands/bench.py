"""``voice-agent bench SUITE``: run a benchmark suite; write JSON, Markdown and a plot."""

from __future__ import annotations

import argparse
from pathlib import Path

BENCH_SUITES = ("chunker", "tts", "agent", "encoding", "capacity", "overhead", "reliability", "local_model",
               "timings", "voices", "engine")


def _bench(args: argparse.Namespace) -> int:
    import importlib

    for name in BENCH_SUITES if args.suite == "all" else [args.suite]:
        print(f"== {name}", flush=True)
        suite = importlib.import_module(f"voice_agent.bench.{name}")
        options = {"trials": args.trials} if args.trials else {}
        suite.main(Path(args.out_dir), **options, quick=args.quick)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser("bench", help="run a benchmark suite; write JSON and Markdown results")
    bench.add_argument("suite", choices=(*BENCH_SUITES, "all"),
                       help="chunker: splitting vs peers; tts: whole passage vs first sentence; agent: batch vs "
                            "incremental through the real servers, barge-in, and stalls in playback; encoding: the "
                            "caller's formats' bit rates and Base64 growth over 24 clips; capacity: concurrent "
                            "sessions against one TTS server, windows and whole; overhead: first audio minus (first "
                            "chunk ready + its inference), windows and whole; reliability: load to 16 sessions, "
                            "100,000 fuzz frames per leg, 100 injected faults, 100 callers leaving, a 1,000-answer "
                            "soak (about 1.5 h); local_model: the offline model's tokens per second and its build's "
                            "CPU features; timings: word timings against a speech recogniser and the speech onset; "
                            "voices: how clearly a recogniser hears each voice (word error rate on others' plain and "
                            "number-heavy text); engine: the engine's time to first audio for 3-16 words under each "
                            "candidate's session options, where its time goes, and windows' seams and shapes")
    bench.add_argument("--out-dir", "--out", default="results", help="where results go (default: results)")
    bench.add_argument("--trials", type=int, help="trials per measurement (default: each suite's own)")
    bench.add_argument("--quick", action="store_true",
                       help="the smallest run that still makes every measurement of the suite (one trial, the "
                            "shortest inputs): proves the suite works, as CI does; its figures are not the "
                            "suite's figures")
    bench.set_defaults(handler=_bench)
