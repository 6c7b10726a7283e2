"""The voice agent hosted on Bedrock AgentCore: model stream -> sentence chunker -> TTS -> caller events."""
