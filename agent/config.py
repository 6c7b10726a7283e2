"""The agent's configuration: one table of settings, each read from its environment variable with
its default and meaning (``settings_table``). ``docs/configuration.md`` is generated from it."""

from __future__ import annotations

from dataclasses import dataclass

from settings_table import above, at_least, flag, from_env, setting
from tts_protocol import BIDI_PATH

DEFAULT_TTS_URL = f"ws://127.0.0.1:8081{BIDI_PATH}"
DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful voice assistant. Your answers are spoken aloud, so answer in plain, "
    "conversational sentences without markdown, lists or code."
)
MODEL_KINDS = ("auto", "bedrock", "local", "replay")


def _model_kind(text: str) -> str:
    if text not in MODEL_KINDS:
        raise ValueError(f"must be one of {', '.join(MODEL_KINDS)}")
    return text


@dataclass(frozen=True)
class AgentSettings:
    tts_url: str = setting("VOICE_AGENT_TTS_URL", DEFAULT_TTS_URL,
                           "the TTS container's bidirectional-stream WebSocket, used when no SageMaker endpoint is "
                           "configured")
    sagemaker_endpoint: str | None = setting("SAGEMAKER_ENDPOINT_NAME", None,
                                             "when set, the TTS session goes through this SageMaker endpoint")
    sagemaker_region: str | None = setting("SAGEMAKER_REGION", None, "the endpoint's region; unset: `AWS_REGION`")
    sagemaker_endpoint_url: str | None = setting(
        "SAGEMAKER_ENDPOINT_URL", None, "overrides `https://runtime.sagemaker.REGION.amazonaws.com:8443`")
    sagemaker_ca_bundle: str | None = setting("SAGEMAKER_CA_BUNDLE", None,
                                              "a private CA to trust for that URL (the local stand-in's)")
    model: str = setting("VOICE_AGENT_MODEL", "auto",
                         "which model answers: `bedrock`, `local` (SmolLM2-135M in a worker process), `replay` (a "
                         "recording), or `auto`: Bedrock when `BEDROCK_MODEL_ID` is set and boto3 finds "
                         "credentials, the local model otherwise", _model_kind)
    bedrock_model_id: str | None = setting("BEDROCK_MODEL_ID", None, "the Bedrock model (or inference profile) id")
    bedrock_max_tokens: int = setting(
        "BEDROCK_MAX_TOKENS", 1024, "the answer length limit; a spoken answer is short, and an answer cut here is "
        "still spoken up to where it stopped (`truncated` in the end event)", above(0, int))
    bedrock_temperature: float | None = setting("BEDROCK_TEMPERATURE", None,
                                                "sampling temperature, 0 to 1; unset: the model's default", float)
    bedrock_top_p: float | None = setting("BEDROCK_TOP_P", None, "nucleus sampling, 0 to 1; unset: the model's "
                                                                 "default", float)
    bedrock_endpoint_url: str | None = setting(
        "BEDROCK_ENDPOINT_URL", None, "overrides the bedrock-runtime endpoint (a VPC endpoint, or the local "
        "stand-in `voice-agent bedrock-local`)")
    bedrock_read_timeout: float = setting("BEDROCK_READ_TIMEOUT", 60.0, "seconds without a byte from Bedrock's "
                                                                        "stream before the answer fails",
                                          above(0))
    aws_region: str | None = setting("AWS_REGION", None, "Bedrock's region; unset: boto3 resolves it "
                                                         "(`AWS_DEFAULT_REGION`, the profile)")
    replay: str = setting("VOICE_AGENT_REPLAY", "long",
                          "with the replay model, a packaged recording (`short`, `long`, `markdown`, `unfinished`, "
                          "`clauses`) or a path")
    replay_speed: float = setting("VOICE_AGENT_REPLAY_SPEED", 1.0, "2.0 replays a recording twice as fast as it "
                                                                   "was recorded", above(0))
    local_max_tokens: int = setting("VOICE_AGENT_LOCAL_MAX_TOKENS", 160, "the local model's answer length limit",
                                    above(0, int))
    local_seed: int = setting("VOICE_AGENT_LOCAL_SEED", 7, "the local model's sampling seed (same seed, same "
                                                           "answer)", int)
    voice: str | None = setting("VOICE_AGENT_VOICE", None, "the default voice; unset: the TTS server's default")
    system_prompt: str = setting("VOICE_AGENT_SYSTEM_PROMPT", DEFAULT_SYSTEM_PROMPT, "the model's system prompt")
    quick_first_chunk: bool = setting("VOICE_AGENT_QUICK_FIRST_CHUNK", True,
                                      "`1`/`0`: let the first chunk end at a clause mark", flag)
    pipelining: bool = setting("VOICE_AGENT_PIPELINING", True,
                               "`1`/`0`: send each sentence without waiting for the previous one's audio", flag)
    tts_timeout: float = setting(
        "VOICE_AGENT_TTS_TIMEOUT", 60.0, "seconds to wait for a sentence's next audio before the answer fails with "
        "`tts_failed` (a stalled TTS container never leaves the caller hanging)", above(0))
    tts_reconnects: int = setting(
        "VOICE_AGENT_TTS_RECONNECTS", 3, "times a lost TTS session is reopened (waits 0.2 s, doubling) and its "
        "unfinished sentences resent, before the answer fails with `tts_failed`; raise it to ride out a container "
        "restart (about 5 s here: 6 attempts wait up to 12.6 s)", at_least(0))
    max_conversations: int = setting(
        "VOICE_AGENT_MAX_CONVERSATIONS", 256, "conversations kept in memory, one per session; beyond it the least "
        "recently used is forgotten (its session's next turn starts afresh). Each keeps its last 20 messages",
        at_least(1))
    shutdown_grace: float = setting(
        "VOICE_AGENT_SHUTDOWN_GRACE", 5.0, "seconds the answers in progress may go on once the agent is told to stop "
        "(SIGTERM); then each ends with a `shutting_down` error event and the process exits. Keep it below the "
        "platform's kill delay (`docker stop` waits 10 s) by the few seconds stopping takes", above(0))
    diagnostics: bool = setting(
        "VOICE_AGENT_DIAGNOSTICS", False, "`1`: also serve `GET /diagnostics` (asyncio tasks, answers running, "
        "conversations, open file descriptors, resident memory) for soak runs and leak checks on a local agent", flag)
    record_dir: str | None = setting(
        "VOICE_AGENT_RECORD_DIR", None, "write every whole model stream there in the replay format (one JSONL file "
        "per answer), to replay a live answer later at its own pace; unset: nothing is recorded")

    @classmethod
    def from_env(cls) -> AgentSettings:
        return from_env(cls)
