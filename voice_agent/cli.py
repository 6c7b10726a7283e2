"""``voice-agent``: serve the TTS container or the agent, ask a question, run the offline demo."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DEMO_QUESTION = "Why does a voice assistant feel faster when it speaks each sentence as soon as it is written?"


def _serve_tts(args: argparse.Namespace) -> int:
    import uvicorn

    from tts_server.app import MAX_FRAME_BYTES, ServerSettings, create_app

    settings = ServerSettings(voices_path=args.voices, default_voice=args.default_voice, threads=args.threads,
                              idle_timeout=args.idle_timeout, max_sessions=args.max_sessions)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="info",
                ws_max_size=MAX_FRAME_BYTES, access_log=False)
    return 0


def _serve_agent(args: argparse.Namespace) -> int:
    from agent.config import AgentSettings
    from agent.entrypoint import serve

    # The runtime logs through its own handler; without this every line would appear twice.
    logging.getLogger("bedrock_agentcore").propagate = False
    settings = AgentSettings.from_env()
    overrides = {"tts_url": args.tts_url, "replay": args.replay, "replay_speed": args.replay_speed,
                 "model": "replay" if args.replay else args.model}
    settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    serve(settings, host=args.host, port=args.port)
    return 0


def _ask(args: argparse.Namespace) -> int:
    from agent import events
    from voice_agent.caller import CallerError, ask, ask_runtime, ask_ws, ask_ws_runtime, write_audio
    from voice_agent.playback import Player, player_command

    text_out = sys.stderr if args.json else sys.stdout
    player = None
    if args.play or args.player:
        command = args.player or player_command(args.format)
        if command is None:
            print(f"no audio player for {args.format} here: install FFmpeg (ffplay), or pulseaudio-utils (paplay) "
                  "or alsa-utils (aplay) for pcm16/wav, or name one with --player", file=sys.stderr)
            return 2
        player = Player(command)
    received = {"bytes": 0}

    def show(event: dict[str, Any]) -> None:
        """Live progress: the text as it streams, and where in it the first audio arrived."""
        if event["type"] == "text":
            print(event["text"], end="", file=text_out, flush=True)
        elif event["type"] == "audio":
            data = event["data"] if "data" in event else events.decode_audio(event)
            if not received["bytes"]:
                print(" [audio]", end="", file=text_out, flush=True)
            received["bytes"] += len(data)
            if player is not None:
                player.write(data)

    options = {"mode": args.mode, "voice": args.voice, "speed": args.speed, "fmt": args.format,
               "timeout": args.timeout, "on_event": show}
    try:
        if args.runtime_arn and args.ws:
            answer = asyncio.run(ask_ws_runtime(args.runtime_arn, args.question, qualifier=args.qualifier,
                                                session_id=args.session_id, region=args.region,
                                                endpoint_url=args.endpoint_url, **options))
        elif args.runtime_arn:
            answer = ask_runtime(args.runtime_arn, args.question, qualifier=args.qualifier, session_id=args.session_id,
                                 region=args.region, endpoint_url=args.endpoint_url, **options)
        elif args.ws:
            answer = asyncio.run(ask_ws(args.url, args.question, session_id=args.session_id, **options))
        else:
            answer = asyncio.run(ask(args.url, args.question, session_id=args.session_id, **options))
    except (CallerError, OSError, TimeoutError) as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    finally:
        if player is not None:
            player.close()
    if args.out:
        write_audio(args.out, answer)
    summary = answer.summary()
    if args.json:
        print(file=sys.stderr)
        print(json.dumps(summary))
    else:
        print()
        print(f"time to first text:  {summary['time_to_first_text_ms']} ms")
        print(f"time to first audio: {summary['time_to_first_audio_ms']} ms")
        print(f"total:               {summary['total_ms']} ms")
        print(f"audio:               {summary['audio_seconds']:.2f} s ({args.format}, {len(answer.audio):,} bytes) "
              f"in {summary['sentences']} sentence(s)" + (f", written to {args.out}" if args.out else ""))
    return 0


def _sagemaker_local(args: argparse.Namespace) -> int:
    from tts_server.model_files import cache_dir
    from voice_agent.local_tls import create_local_tls
    from voice_agent.sagemaker_local import serve_stand_in

    tls = create_local_tls(Path(args.tls_dir) if args.tls_dir else cache_dir() / "sagemaker-local-tls")
    print(f"SageMaker stand-in: set SAGEMAKER_ENDPOINT_URL=https://127.0.0.1:{args.port} "
          f"SAGEMAKER_CA_BUNDLE={tls.ca_cert}", flush=True)
    asyncio.run(serve_stand_in(args.container_url, args.host, args.port, tls))
    return 0


def _bedrock_local(args: argparse.Namespace) -> int:
    from agent.replay_model import load_recording
    from voice_agent.bedrock_local import serve

    print(f"Bedrock stand-in: set BEDROCK_ENDPOINT_URL=http://{args.host}:{args.port}", flush=True)
    serve(load_recording(args.replay), args.host, args.port, args.replay_speed)
    return 0


def _check(args: argparse.Namespace) -> int:
    from agent.sagemaker_transport import SageMakerConnector
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


def _record(args: argparse.Namespace) -> int:
    from agent.config import AgentSettings
    from agent.models import build_model, model_kind
    from agent.recorder import record

    settings = AgentSettings.from_env()
    if args.model:
        settings = dataclasses.replace(settings, model=args.model)
    kind = model_kind(settings)
    model_id = settings.bedrock_model_id if kind == "bedrock" else kind
    count = asyncio.run(record(build_model(settings), args.prompt, Path(args.out),
                               system_prompt=settings.system_prompt, model_id=model_id))
    print(f"recorded {count} events from the {kind} model to {args.out}")
    return 0


BENCH_SUITES = ("chunker", "tts", "agent", "encoding", "capacity", "overhead", "reliability", "local_model")


def _bench(args: argparse.Namespace) -> int:
    import importlib

    for name in BENCH_SUITES if args.suite == "all" else [args.suite]:
        print(f"== {name}", flush=True)
        suite = importlib.import_module(f"voice_agent.bench.{name}")
        options = {"trials": args.trials} if args.trials else {}
        suite.main(Path(args.out_dir), **options)
    return 0


def _prepare_model(args: argparse.Namespace) -> int:
    from tts_server.model_files import ModelFileError, ensure_model, fetch_verified

    print(f"model ready: {ensure_model(progress=print)}")
    try:
        for kind in ("model", "voices"):
            url, digest = getattr(args, f"{kind}_url"), getattr(args, f"{kind}_sha256")
            if url:
                if not digest:
                    raise ModelFileError(f"--{kind}-url needs --{kind}-sha256: nothing is kept unverified")
                print(f"{kind} ready: {fetch_verified(url, digest, progress=print)}")
    except (ModelFileError, OSError) as exc:
        print(f"prepare-model: {exc}", file=sys.stderr)
        return 1
    return 0


def _demo(args: argparse.Namespace) -> int:
    from voice_agent import servers
    from voice_agent.caller import CallerError

    try:
        return _run_demo(args)
    except (servers.ServerDied, servers.ServerStartError, CallerError) as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1


def _run_demo(args: argparse.Namespace) -> int:
    """Both modes speak the same text: with a recording, both replay it; with the local model, the
    incremental answer is live and recorded, and batch mode replays that recording at its pace."""
    import shutil

    from agent.replay_model import load_recording
    from voice_agent import servers

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
    from voice_agent import servers

    env = {"VOICE_AGENT_RECORD_DIR": str(record_dir)} if record_dir else None
    return servers.start_agent_server(tts.ws_url, replay=replay, model=None if replay else "local",
                                      log_path=str(out_dir / "agent.log"), progress=print, env=env)


def _demo_answer(agent: Any, tts: Any, prompt: str, mode: str, out_dir: Path) -> Any:
    from voice_agent import servers
    from voice_agent.caller import StreamBroken, ask, write_audio

    print(f"\n[{mode}] A: ", end="", flush=True)
    def show(event: dict[str, Any]) -> None:
        if event["type"] == "text":
            print(event["text"], end="", flush=True)

    answering = ask(agent.http_url, prompt, mode=mode, on_event=show)
    answer = asyncio.run(servers.supervised(answering, [agent, tts], symptoms=(StreamBroken, OSError, TimeoutError)))
    path = out_dir / f"answer-{mode}.wav"
    write_audio(str(path), answer)
    print(f"\n[{mode}] first text {answer.time_to_first_text_ms:.0f} ms, first audio "
          f"{answer.time_to_first_audio_ms:.0f} ms, total {answer.total_ms:.0f} ms, "
          f"{answer.audio_seconds:.1f} s of audio in {len(answer.sentences)} chunk(s) -> {path}")
    return answer


def _teardown(args: argparse.Namespace) -> int:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from infra.settings import InfraSettings
    from infra.teardown import Teardown, TeardownError

    settings = InfraSettings(stack_name=args.stack_name)
    settings.validate()
    session = boto3.Session(region_name=args.region)
    if not session.region_name:
        print("teardown: no region: pass --region or set AWS_REGION", file=sys.stderr)
        return 2
    teardown = Teardown(settings, session)
    try:
        plan = teardown.plan()
    except (BotoCoreError, ClientError) as exc:  # no credentials, access denied, no network
        print(f"teardown: cannot list what exists: {exc}", file=sys.stderr)
        return 1
    where = f"stack {settings.stack_name} in {session.region_name}"
    if not plan:
        print(f"teardown: nothing of {where} exists")
        return 0
    print(f"teardown of {where}: {'would delete' if args.dry_run else 'deletes'} {len(plan)} items")
    for item in plan:
        print(f"  {item}")
    if args.dry_run:
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            print("teardown: not a terminal; pass --yes to delete without confirmation", file=sys.stderr)
            return 2
        if input("delete all of this? type 'delete' to go on: ").strip() != "delete":
            print("teardown: nothing deleted")
            return 1
    try:
        remaining = teardown.run()
    except (TeardownError, BotoCoreError, ClientError) as exc:
        print(f"teardown: {exc}; run it again to go on", file=sys.stderr)
        return 1
    if remaining:
        print(f"teardown: {len(remaining)} items still exist:", file=sys.stderr)
        for item in remaining:
            print(f"  {item}", file=sys.stderr)
        return 1
    print(f"teardown: {where} is gone, nothing left behind")
    return 0


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"{name}={value!r} is not a whole number") from None


def build_parser() -> argparse.ArgumentParser:
    from agent.audio_encoding import DEFAULT_FORMAT, FORMATS
    from voice_agent.check import DEFAULT_TEXT as CHECK_TEXT

    parser = argparse.ArgumentParser(prog="voice-agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    def add_server_options(command: argparse.ArgumentParser, port: int) -> None:
        command.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
        command.add_argument("--port", type=int, default=port, help=f"port to listen on (default: {port})")

    def add_tts_options(command: argparse.ArgumentParser) -> None:
        # Each default can come from the environment: SageMaker starts the container as plain `serve`.
        env = os.environ
        command.add_argument("--voices", type=Path, default=env.get("VOICE_AGENT_VOICES") or None,
                             help="a Kokoro voices file (.npz, e.g. voices-v1.0.bin); default: $VOICE_AGENT_VOICES, "
                                  "else the packaged voices")
        command.add_argument("--default-voice", default=env.get("VOICE_AGENT_DEFAULT_VOICE") or "jf_alpha",
                             help="voice used when a request names none (default: $VOICE_AGENT_DEFAULT_VOICE "
                                  "or jf_alpha)")
        command.add_argument("--threads", type=int, default=_env_int("VOICE_AGENT_THREADS"),
                             help="ONNX Runtime threads (default: $VOICE_AGENT_THREADS, else every core)")
        command.add_argument("--max-sessions", type=int, default=_env_int("VOICE_AGENT_MAX_SESSIONS") or 16,
                             help="sessions served at once; more are refused with 'overloaded' "
                                  "(default: $VOICE_AGENT_MAX_SESSIONS or 16)")
        command.add_argument("--idle-timeout", type=float, default=300.0,
                             help="close a session after this many seconds without a message while nothing "
                                  "is pending (default: 300)")

    serve_tts = commands.add_parser("serve-tts", help="run the Kokoro TTS server (the SageMaker container app)")
    add_server_options(serve_tts, 8080)
    add_tts_options(serve_tts)
    serve_tts.set_defaults(handler=_serve_tts)

    serve = commands.add_parser("serve", help="the container entry point SageMaker runs: the TTS server on "
                                              "0.0.0.0:8080")
    add_server_options(serve, 8080)
    add_tts_options(serve)
    serve.set_defaults(handler=_serve_tts, host="0.0.0.0")

    serve_agent = commands.add_parser("serve-agent", help="run the agent (BedrockAgentCoreApp)")
    add_server_options(serve_agent, 8080)
    serve_agent.add_argument("--tts-url", help="the TTS server's WebSocket URL "
                                               "(default: $VOICE_AGENT_TTS_URL or ws://127.0.0.1:8081/...)")
    serve_agent.add_argument("--model", choices=("auto", "bedrock", "local", "replay"),
                             help="which model answers (default: $VOICE_AGENT_MODEL or auto: Bedrock when "
                                  "configured with credentials, else the local SmolLM2 model)")
    serve_agent.add_argument("--replay", help="answer with this recording (implies --model replay): "
                                              "clauses, short, long, markdown, unfinished, or a path")
    serve_agent.add_argument("--replay-speed", type=float, help="replay this many times faster than recorded")
    serve_agent.set_defaults(handler=_serve_agent)

    ask = commands.add_parser(
        "ask", help="ask the agent a question; stream the text, save or play the audio",
        description="Ask the agent one question. The answer's text is printed as it streams, with "
                    "[audio] where its first audio arrived; then the timings. Local agents are asked over "
                    "HTTP (SSE, Base64 audio) or, with --ws, over the binary WebSocket leg; a deployed agent "
                    "through AgentCore's InvokeAgentRuntime with --runtime-arn.")
    ask.add_argument("question", help="what to ask")
    ask.add_argument("--url", default="http://127.0.0.1:8080", help="the local agent's base URL "
                                                                  "(default: http://127.0.0.1:8080)")
    ask.add_argument("--ws", action="store_true", help="use the binary WebSocket leg /ws instead of SSE: "
                                                       "audio as binary frames, no Base64 (with --runtime-arn: "
                                                       "AgentCore's SigV4-signed WebSocket route)")
    ask.add_argument("--mode", choices=("incremental", "batch"), default="incremental",
                     help="incremental: speak each sentence as soon as it is written (default); batch: "
                          "speak the whole answer once the model has finished")
    ask.add_argument("--voice", help="voice name (default: the TTS server's)")
    ask.add_argument("--speed", type=float, help="speaking rate, 0.5 to 2.0 (default: 1.0)")
    ask.add_argument("--play", action="store_true", help="play the answer through the speakers as it streams "
                                                         "(ffplay, paplay or aplay, whichever is installed)")
    ask.add_argument("--player", help="play through this command instead; it reads the audio stream from "
                                      "standard input, e.g. 'mpv -'")
    ask.add_argument("--format", choices=tuple(FORMATS), default=DEFAULT_FORMAT,
                     help="audio format: pcm16 (raw, saved as WAV), wav, mp3 (48 kbps), aac (32 kbps, fragmented "
                          "MP4), opus (Ogg); each answer is one continuous stream")
    ask.add_argument("--out", help="write the answer's audio to this file")
    ask.add_argument("--json", action="store_true", help="print one JSON object with the timings and the text "
                                                         "on standard output (the live text goes to stderr)")
    ask.add_argument("--timeout", type=float, default=300.0, help="seconds the whole answer may take "
                                                                   "(default: 300)")
    ask.add_argument("--runtime-arn", help="ask a deployed agent through AgentCore's InvokeAgentRuntime "
                                           "(SigV4 with boto3's credentials) instead of --url; with --ws, "
                                           "through its WebSocket route")
    ask.add_argument("--qualifier", help="the runtime endpoint (default: the service's DEFAULT)")
    ask.add_argument("--session-id", help="the AgentCore runtime session id: answers of one session continue "
                                          "one conversation; at least 33 characters for a deployed agent "
                                          "(default: a new session)")
    ask.add_argument("--region", help="the runtime's region (default: from the ARN)")
    ask.add_argument("--endpoint-url", help="override the AgentCore endpoint (e.g. a local stand-in)")
    ask.set_defaults(handler=_ask)

    standin = commands.add_parser("sagemaker-local", help="a local stand-in for SageMaker's bidirectional "
                                                          "streaming API, in front of a TTS container")
    add_server_options(standin, 8443)
    standin.add_argument("--container-url", required=True,
                         help="the container's WebSocket, e.g. ws://127.0.0.1:8081/invocations-bidirectional-stream")
    standin.add_argument("--tls-dir", help="where to write the test CA and server certificate "
                                           "(default: the cache directory)")
    standin.set_defaults(handler=_sagemaker_local)

    bedrock = commands.add_parser("bedrock-local", help="a local stand-in for Bedrock's ConverseStream that "
                                                        "streams a recording, for the real BedrockModel offline")
    add_server_options(bedrock, 8090)
    bedrock.add_argument("--replay", default="long", help="the recording to stream: clauses, short, long, "
                                                          "markdown, unfinished, or a path (default: long)")
    bedrock.add_argument("--replay-speed", type=float, default=1.0, help="stream this many times faster than "
                                                                         "recorded (default: 1)")
    bedrock.set_defaults(handler=_bedrock_local)

    checker = commands.add_parser(
        "check", help="after a deploy: prove the TTS endpoint can synthesize, not just answer /ping",
        description="Open a real bidirectional session, synthesize one sentence, and verify the audio "
                    "(non-empty, whole samples, not silence, a plausible duration) and synthesis_complete. "
                    "Exit status 0 when the endpoint can speak, 1 when it cannot.")
    target = checker.add_mutually_exclusive_group(required=True)
    target.add_argument("--endpoint", help="the SageMaker endpoint name (InvokeEndpointWithBidirectionalStream, "
                                           "boto3's credentials)")
    target.add_argument("--url", help="a container's WebSocket instead, e.g. "
                                      "ws://127.0.0.1:8081/invocations-bidirectional-stream")
    checker.add_argument("--region", default=os.environ.get("AWS_REGION"),
                         help="the endpoint's region (default: $AWS_REGION)")
    checker.add_argument("--endpoint-url", help="override https://runtime.sagemaker.REGION.amazonaws.com:8443 "
                                                "(e.g. the local stand-in)")
    checker.add_argument("--ca-bundle", help="a private CA to trust for --endpoint-url (the stand-in's)")
    checker.add_argument("--text", default=CHECK_TEXT,
                         help="the sentence to synthesize")
    checker.add_argument("--voice", help="voice name (default: the container's)")
    checker.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for audio (default: 60)")
    checker.add_argument("--json", action="store_true", help="print the result as one JSON object")
    checker.set_defaults(handler=_check)

    record = commands.add_parser("record", help="capture a model's stream into the replay format")
    record.add_argument("--prompt", required=True)
    record.add_argument("--out", required=True, help="the JSONL file to write")
    record.add_argument("--model", choices=("auto", "bedrock", "local"),
                        help="which model (default: $VOICE_AGENT_MODEL or auto)")
    record.set_defaults(handler=_record)

    bench = commands.add_parser("bench", help="run a benchmark suite; write JSON and Markdown results")
    bench.add_argument("suite", choices=(*BENCH_SUITES, "all"),
                       help="chunker: splitting vs peers; tts: whole passage vs first sentence; "
                            "agent: batch vs incremental through the real servers, and barge-in; encoding: "
                            "the caller's formats' bit rates and Base64 growth over 24 clips; capacity: "
                            "concurrent sessions against one TTS server; overhead: first audio minus (first "
                            "chunk ready + its inference); reliability: load to 16 sessions and fuzzing; "
                            "local_model: the offline model's tokens per second and its build's CPU features")
    bench.add_argument("--out-dir", default="results", help="where results go (default: results)")
    bench.add_argument("--trials", type=int, help="trials per measurement (default: each suite's own)")
    bench.set_defaults(handler=_bench)

    teardown = commands.add_parser(
        "teardown", help="delete everything the CDK deploy created, including the retained staging bucket, "
                         "ECR repositories and log groups",
        description="Deletes the main stack (AgentCore runtime, SageMaker endpoint, configuration, model, alarms, "
                    "dashboard), then the staging stack, then empties and deletes its bucket and ECR repositories, "
                    "then the endpoint's and runtime's log groups. Uses boto3's credentials and region.")
    teardown.add_argument("--stack-name", default="VoiceAgent", help="the deployed stack_name (default: VoiceAgent)")
    teardown.add_argument("--region", help="the deployment's region (default: boto3's: $AWS_REGION, the profile)")
    teardown.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")
    teardown.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a terminal)")
    teardown.set_defaults(handler=_teardown)

    prepare = commands.add_parser("prepare-model", help="assemble and verify the Kokoro model in the cache")
    prepare.add_argument("--model-url", help="also fetch another Kokoro ONNX model (the GPU image's full-precision "
                                             "kokoro-v1.0.onnx) into the cache; serve it with $VOICE_AGENT_MODEL_FILE")
    prepare.add_argument("--model-sha256", help="the SHA-256 the fetched model must have")
    prepare.add_argument("--voices-url", help="also fetch a voices file (e.g. voices-v1.0.bin); serve it with "
                                              "$VOICE_AGENT_VOICES")
    prepare.add_argument("--voices-sha256", help="the SHA-256 the fetched voices file must have")
    prepare.set_defaults(handler=_prepare_model)

    demo = commands.add_parser("demo", help="start both servers, ask once in each mode, compare first audio")
    demo.add_argument("--question", help=f"the question to ask (default: {DEMO_QUESTION!r}, or the one the "
                                         "recording answers)")
    demo.add_argument("--replay", help="answer with a recording (clauses, short, long, markdown, unfinished, "
                                       "or a path) instead of the local model")
    demo.add_argument("--out-dir", default="out", help="where the WAV files and server logs go (default: out)")
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    from agent.processes import exit_with_parent

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    exit_with_parent()
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
