"""``voice-agent demo``: both servers up, one question asked in both modes, the WAVs written, time
to first audio compared, like with like.

Both modes speak the same text: with a recording, both replay it; with the local model, the
incremental answer is live and recorded, and batch mode replays that recording at its pace. A
server that dies is reported in one line (which, how, its log's last lines) and the demo exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

DEMO_QUESTION = "Why does a voice assistant feel faster when it speaks each sentence as soon as it is written?"
DEFAULT_OUT_DIR = "out"


def _demo(args: argparse.Namespace) -> int:
    from voice_agent.caller import CallerError
    from voice_agent.dev import servers

    try:
        return _run_demo(args)
    except (servers.ServerDied, servers.ServerStartError, CallerError) as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1


def _run_demo(args: argparse.Namespace) -> int:
    from agent.llm.replay import load_recording
    from voice_agent.dev import servers

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    recorded_prompt = load_recording(args.replay).meta.get("prompt") if args.replay else None
    prompt = args.question or recorded_prompt or DEMO_QUESTION
    answering = f"replaying '{args.replay}'" if args.replay else "the local SmolLM2-135M model"
    print(f"starting the TTS server (logs: {out_dir / 'tts.log'}); the first start assembles the model...", flush=True)
    with servers.running(servers.start_tts_server(log_path=str(out_dir / "tts.log"), progress=print)) as tts:
        print(f"TTS server healthy on port {tts.port}; starting the agent ({answering})", flush=True)
        print(f"\nQ: {prompt}")
        if args.replay:
            with servers.running(_demo_agent(tts, out_dir, replay=args.replay)) as agent:
                incremental = _demo_answer(agent, tts, prompt, "incremental", out_dir)
                batch = _demo_answer(agent, tts, prompt, "batch", out_dir)
        else:
            streams = out_dir / "model-streams"
            shutil.rmtree(streams, ignore_errors=True)
            with servers.running(_demo_agent(tts, out_dir, record_dir=streams)) as agent:
                incremental = _demo_answer(agent, tts, prompt, "incremental", out_dir)
            recording = max(streams.glob("*.jsonl"), key=lambda path: path.stat().st_mtime)
            print(f"\nbatch mode replays the model's stream just recorded ({recording}) at its recorded pace",
                  flush=True)
            with servers.running(_demo_agent(tts, out_dir, replay=str(recording))) as agent:
                batch = _demo_answer(agent, tts, prompt, "batch", out_dir)
    ratio = batch.time_to_first_audio_ms / incremental.time_to_first_audio_ms
    same = incremental.text == batch.text
    print(f"\nboth modes spoke the same answer ({len(batch.text)} characters)" if same else
          "\nnote: the two modes spoke different answers, so the ratio below compares different texts")
    print(f"time to first audio: incremental {incremental.time_to_first_audio_ms:.0f} ms, "
          f"batch {batch.time_to_first_audio_ms:.0f} ms: {ratio:.1f}x sooner with incremental speech")
    return 0


def _demo_agent(tts: Any, out_dir: Path, *, replay: str | None = None, record_dir: Path | None = None) -> Any:
    from voice_agent.dev import servers

    env = {"VOICE_AGENT_RECORD_DIR": str(record_dir)} if record_dir else None
    return servers.start_agent_server(tts.ws_url, replay=replay, model=None if replay else "local",
                                      log_path=str(out_dir / "agent.log"), progress=print, env=env)


def _demo_answer(agent: Any, tts: Any, prompt: str, mode: str, out_dir: Path) -> Any:
    from voice_agent.caller import Options, StreamBroken, ask, write_audio
    from voice_agent.dev import servers

    print(f"\n[{mode}] A: ", end="", flush=True)
    def show(event: dict[str, Any]) -> None:
        if event["type"] == "text":
            print(event["text"], end="", flush=True)

    answering = ask(prompt, Options(url=agent.http_url, mode=mode), on_event=show)
    answer = asyncio.run(servers.supervised(answering, [agent, tts], symptoms=(StreamBroken, OSError, TimeoutError)))
    path = out_dir / f"answer-{mode}.wav"
    write_audio(str(path), answer)
    print(f"\n[{mode}] first text {answer.time_to_first_text_ms:.0f} ms, first audio "
          f"{answer.time_to_first_audio_ms:.0f} ms, first speech {_ms(answer.time_to_first_speech_ms)}, "
          f"total {answer.total_ms:.0f} ms, "
          f"{answer.audio_seconds:.1f} s of audio in {len(answer.sentences)} chunk(s) -> {path}")
    return answer


def _ms(value: float | None) -> str:
    return "none" if value is None else f"{value:.0f} ms"


def register(commands: argparse._SubParsersAction) -> None:
    from agent.recordings import packaged_recordings

    demo = commands.add_parser("demo", help="start both servers, ask once in each mode, compare first audio")
    demo.add_argument("--question", help=f"the question to ask (default: {DEMO_QUESTION!r}, or the one the "
                                         "recording answers)")
    demo.add_argument("--replay", help=f"answer with a recording ({', '.join(packaged_recordings())}, or a path) "
                                       "instead of the local model")
    demo.add_argument("--out-dir", default=DEFAULT_OUT_DIR,
                      help=f"where the WAV files and server logs go (default: {DEFAULT_OUT_DIR})")
    demo.set_defaults(handler=_demo)
