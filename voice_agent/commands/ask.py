"""``voice-agent ask``: ask an agent one question; stream the text, save or play the audio."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

from caller_protocol import DEFAULT_FORMAT, DEFAULT_MODE, FORMATS, MAX_SPEED, MIN_SPEED, MODES

DESCRIPTION = ("Ask the agent one question. The answer's text is printed as it streams, with [audio] where its "
               "first audio arrived; then the timings. Local agents are asked over HTTP (SSE, Base64 audio) or, "
               "with --ws, over the binary WebSocket leg; a deployed agent through AgentCore's InvokeAgentRuntime "
               "with --runtime-arn.")


T = TypeVar("T")


def run_interruptibly(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, where Ctrl-C always ends in :class:`KeyboardInterrupt`. ``asyncio.run`` turns
    the first SIGINT into a cancellation of the main task and raises only if that task ends
    cancelled; a Ctrl-C that lands while a library finishes its own clean-up (a WebSocket closing)
    was lost there, and the answer played on to its end. Here the interruption is remembered."""
    interrupted = False

    async def main() -> T:
        task, loop = asyncio.current_task(), asyncio.get_running_loop()
        assert task is not None

        def on_interrupt() -> None:
            nonlocal interrupted
            interrupted = True
            task.cancel()

        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        try:
            return await coroutine
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    try:
        result = asyncio.run(main())
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    if interrupted:
        raise KeyboardInterrupt
    return result


class _Listener:
    """What the caller does with an answer as it streams: print the text (or, with captions, each
    word as it is heard), play the audio, and know how much of it has been played."""

    def __init__(self, args: argparse.Namespace, player: Any) -> None:
        from voice_agent.playback import Captions, PlaybackClock

        self.out = sys.stderr if args.json else sys.stdout
        self.player = player
        self.clock = PlaybackClock()
        self.captions = Captions(self.clock, self.out) if args.captions else None
        self.pcm = args.format in ("pcm16", "wav")  # else the audio's length is known only from its words
        self.received = 0

    def show(self, event: dict[str, Any]) -> None:
        if event["type"] == "text" and self.captions is None:
            print(event["text"], end="", file=self.out, flush=True)
        elif event["type"] == "words":
            if self.captions is not None:
                self.captions.add(event["words"])
            if not self.pcm:
                self.clock.received(event["words"][-1]["end_ms"])
        elif event["type"] == "audio":
            if not self.received and self.captions is None:
                print(" [audio]", end="", file=self.out, flush=True)
            self.received += len(event["data"])
            if self.player is not None:
                self.player.write(event["data"])
                self.clock.start()
            if self.pcm:
                self.clock.received(self.received / 48)  # 24 kHz, 2 bytes a sample

    def finish(self, *, interrupted: bool) -> None:
        """Let playback finish, or (the listener interrupted) stop it at once."""
        if self.captions is not None:
            self.captions.stop() if interrupted else self.captions.close()
        if self.player is not None:
            self.player.stop() if interrupted else self.player.close()


def _ask(args: argparse.Namespace) -> int:
    from voice_agent.caller import CallerError, Options, ask, new_session_id, write_audio
    from voice_agent.caller.websocket import stopped_playing
    from voice_agent.playback import Player, player_command

    player = None
    if args.play or args.player:
        command = args.player or player_command(args.format)
        if command is None:
            print(f"no audio player for {args.format} here: install FFmpeg (ffplay), or pulseaudio-utils (paplay) "
                  "or alsa-utils (aplay) for pcm16/wav, or name one with --player", file=sys.stderr)
            return 2
        player = Player(command)
    if args.captions and player is None:
        print("--captions prints each word as it is played: it needs --play or --player", file=sys.stderr)
        return 2
    listener = _Listener(args, player)
    # Playing over /ws, an interruption is told to the agent on the same session, so that session needs a name.
    session_id = args.session_id or (new_session_id() if args.ws and player is not None else None)
    options = Options(url=args.url, ws=args.ws, runtime_arn=args.runtime_arn, qualifier=args.qualifier,
                      region=args.region, endpoint_url=args.endpoint_url, mode=args.mode, voice=args.voice,
                      speed=args.speed, format=args.format, session_id=session_id, timeout=args.timeout)
    played = listener.clock.stop if player is not None else None  # asked once, when the listener interrupts
    try:
        answer = run_interruptibly(ask(args.question, options, on_event=listener.show, played=played))
        listener.finish(interrupted=False)
    except KeyboardInterrupt:
        listener.clock.stop()
        listener.finish(interrupted=True)
        if args.ws and player is not None:  # the answer may have ended already: tell the agent where we stopped
            asyncio.run(stopped_playing(options, listener.clock.played_ms()))
        print(f"\ninterrupted after {listener.clock.played_ms() / 1000:.1f} s of the answer", file=sys.stderr)
        return 130
    except (CallerError, OSError, TimeoutError) as exc:
        listener.finish(interrupted=True)
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
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
    if summary["time_to_first_speech_ms"] is not None:
        print(f"first speech heard:  {summary['time_to_first_speech_ms']} ms (playing from the first audio)")
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
    ask.add_argument("--captions", action="store_true", help="with --play or --player: print each word as it is "
                                                             "heard instead of the text as it streams")
    # Ctrl-C while an answer plays over --ws stops it and tells the agent how much was heard.
    ask.add_argument("--out", help="write the answer's audio to this file")
    ask.add_argument("--json", action="store_true", help="print one JSON object with the timings, the text and "
                                                         "each word's start and end on standard output (the live "
                                                         "text goes to stderr)")
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
