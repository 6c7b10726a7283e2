"""The ``voice-agent`` commands, one module each; every module has ``register(subparsers)``, which
adds its command(s) with their options (each default taken from where it is defined) and handler."""

from voice_agent.commands import ask, bench, check, containers, demo, model, record, serve, stand_ins, teardown

COMMANDS = (serve, ask, demo, containers, check, stand_ins, record, bench, teardown, model)
