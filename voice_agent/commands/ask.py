"""``voice-agent ask``: ask an agent one question; stream the text, save or play the audio."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from caller_protocol import DEFAULT_FORMAT, DEFAULT_MODE, FORMATS, MAX_SPEED, MIN_SPEED, MODES

DESCRIPTION = ("Ask the agent one question. The answer's text is printed as it streams, with [audio] where its "
               "first audio arrived; then the timings. Local agents are asked over HTTP (SSE, Base64 audio) or, "
               "with --ws, over the binary WebSocket leg; a deployed agent through AgentCore's InvokeAgentRuntime "
               "with --runtime-arn.")


def _ask(args: argparse.Namespace) -> int:
    from voice_agent.caller import CallerError, Options, ask, write_audio
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
            if not received["bytes"]:
                print(" [audio]", end="", file=text_out, flush=True)
            received["bytes"] += len(event["data"])
            if player is not None:
                player.write(event["data"])

    options = Options(url=args.url, ws=args.ws, runtime_arn=args.runtime_arn, qualifier=args.qualifier,
                      region=args.region, endpoint_url=args.endpoint_url, mode=args.mode, voice=args.voice,
                      speed=args.speed, format=args.format, session_id=args.session_id, timeout=args.timeout)
    try:
        answer = asyncio.run(ask(args.question, options, on_event=show))
    except (CallerError, OSError, TimeoutError) as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    finally:
        if player is not None:
            player.close()
    if args.out:
        write_audio(args.out, answer)
    _report(answer, args)
    return 0


def _report(answer: Any, args: argparse.Namespace) -> None:
    summary = answer.summary()
    if args.json:
        print(file=sys.stderr)
        print(json.dumps(summary))
        return
    print()
    print(f"time to first text:  {summary['time_to_first_text_ms']} ms")
    print(f"time to first audio: {summary['time_to_first_audio_ms']} ms")
    print(f"total:               {summary['total_ms']} ms")
    print(f"audio:               {summary['audio_seconds']:.2f} s ({args.format}, {len(answer.audio):,} bytes) "
          f"in {summary['sentences']} sentence(s)" + (f", written to {args.out}" if args.out else ""))


def register(commands: argparse._SubParsersAction) -> None:
    from voice_agent.caller.answer import DEFAULT_TIMEOUT, DEFAULT_URL

    ask = commands.add_parser("ask", help="ask the agent a question; stream the text, save or play the audio",
                              description=DESCRIPTION)
    ask.add_argument("question", help="what to ask")
    ask.add_argument("--url", default=DEFAULT_URL, help=f"the local agent's base URL (default: {DEFAULT_URL})")
    ask.add_argument("--ws", action="store_true", help="use the binary WebSocket leg /ws instead of SSE: audio as "
                                                       "binary frames, no Base64 (with --runtime-arn: AgentCore's "
                                                       "SigV4-signed WebSocket route)")
    ask.add_argument("--mode", choices=MODES, default=DEFAULT_MODE,
                     help="incremental: speak each sentence as soon as it is written (default); batch: speak the "
                          "whole answer once the model has finished")
    ask.add_argument("--voice", help="voice name (default: the TTS server's)")
    ask.add_argument("--speed", type=float, help=f"speaking rate, {MIN_SPEED} to {MAX_SPEED} (default: 1.0)")
    ask.add_argument("--play", action="store_true", help="play the answer through the speakers as it streams "
                                                         "(ffplay, paplay or aplay, whichever is installed)")
    ask.add_argument("--player", help="play through this command instead; it reads the audio stream from "
                                      "standard input, e.g. 'mpv -'")
    ask.add_argument("--format", choices=FORMATS, default=DEFAULT_FORMAT,
                     help="audio format: pcm16 (raw, saved as WAV), wav, mp3 (48 kbps), aac (32 kbps, fragmented "
                          "MP4), opus (Ogg); each answer is one continuous stream")
    ask.add_argument("--out", help="write the answer's audio to this file")
    ask.add_argument("--json", action="store_true", help="print one JSON object with the timings and the text "
                                                         "on standard output (the live text goes to stderr)")
    ask.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                     help=f"seconds the whole answer may take (default: {DEFAULT_TIMEOUT:.0f})")
    ask.add_argument("--runtime-arn", help="ask a deployed agent through AgentCore's InvokeAgentRuntime (SigV4 "
                                           "with boto3's credentials) instead of --url; with --ws, through its "
                                           "WebSocket route")
    ask.add_argument("--qualifier", help="the runtime endpoint (default: the service's DEFAULT)")
    ask.add_argument("--session-id", help="the AgentCore runtime session id: answers of one session continue one "
                                          "conversation; at least 33 characters for a deployed agent "
                                          "(default: a new session)")
    ask.add_argument("--region", help="the runtime's region (default: from the ARN)")
    ask.add_argument("--endpoint-url", help="override the AgentCore endpoint (e.g. a local stand-in)")
    ask.set_defaults(handler=_ask)
