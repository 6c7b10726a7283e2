"""How a TTS session's frames travel: a :class:`Transport` moves them and knows nothing of their
meaning (``tts_protocol`` does). ``websocket``: the container's WebSocket, reached directly;
``sagemaker``: through SageMaker's ``InvokeEndpointWithBidirectionalStream``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from agent.config import AgentSettings

DEFAULT_OPEN_TIMEOUT = 10.0
"""Seconds to open a session (connect, TLS, upgrade) before it is a ``connection_failed`` error."""


class TransportClosed(Exception):
    """The transport's stream ended: ``error`` is None for an orderly close, else what broke it."""

    def __init__(self, error: str | None = None) -> None:
        super().__init__(error or "closed")
        self.error = error


class Transport(Protocol):
    """Moves protocol frames; knows nothing of their meaning."""

    async def send(self, message: str) -> None:
        """Send one client message. Raises :class:`TransportClosed` if the stream is gone."""

    async def receive(self) -> str | bytes:
        """The next server frame: ``str`` for text, ``bytes`` for binary. Raises
        :class:`TransportClosed` at the end of the stream."""

    async def end_input(self) -> None:
        """No more messages will be sent; answers may still arrive."""

    async def close(self) -> None:
        """Close at once; safe to call twice."""


Connect = Callable[[], Awaitable[Transport]]
"""Opens a new transport; raises ``agent.tts_client.TTSConnectionError`` when it cannot."""


def tts_target(settings: AgentSettings) -> str | Connect:
    """The SageMaker endpoint when one is configured, else the container's WebSocket URL."""
    if not settings.sagemaker_endpoint:
        return settings.tts_url
    import boto3

    from agent.transports.sagemaker import SageMakerConnector

    region = settings.sagemaker_region or settings.aws_region or boto3.Session().region_name
    if not region:
        raise ValueError("SAGEMAKER_ENDPOINT_NAME is set but no region is: set SAGEMAKER_REGION or AWS_REGION")
    return SageMakerConnector(settings.sagemaker_endpoint, region, endpoint_uri=settings.sagemaker_endpoint_url,
                              ca_file=Path(settings.sagemaker_ca_bundle) if settings.sagemaker_ca_bundle else None)
