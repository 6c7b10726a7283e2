"""The TTS session transport through SageMaker's ``InvokeEndpointWithBidirectionalStream``.

Uses the SageMaker runtime HTTP/2 SDK (``aws-sdk-sagemaker-runtime-http2``) with the AWS CRT
HTTP/2 client, the only transport of that SDK that can send and receive at once. Each client
message goes out as a request ``PayloadPart`` (``DataType`` ``UTF8``); each response
``PayloadPart`` comes back as a text frame (``UTF8``) or a binary frame (``BINARY``).
SageMaker delivers every request part to the container as a binary WebSocket frame.

Credentials come from boto3's default chain (under AgentCore, the runtime role) and are read
again for every stream opened, so refreshed temporary credentials are always used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import awscrt.io
import boto3
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
from aws_sdk_sagemaker_runtime_http2.models import (
    InvokeEndpointWithBidirectionalStreamInput,
    ModelError,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
    ResponseStreamEventPayloadPart,
)
from smithy_aws_core.identity import AWSCredentialsIdentity
from smithy_core.exceptions import CallError
from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig

from agent.transports import DEFAULT_OPEN_TIMEOUT, TransportClosed
from agent.tts_client import TTSConnectionError

log = logging.getLogger(__name__)

DEFAULT_OPEN_ATTEMPTS = 4
"""Tries to open a stream when SageMaker throttles or the container refuses (HTTP 424 ModelError)."""
DEFAULT_OPEN_BACKOFF = 0.5
"""Seconds before the second try, doubled for each further one."""


def default_endpoint_uri(region: str) -> str:
    """Bidirectional streaming is served on port 8443 of the regional runtime endpoint."""
    return f"https://runtime.sagemaker.{region}.amazonaws.com:8443"


class Boto3CredentialsResolver:
    """Credentials from boto3's default chain. botocore refreshes temporary credentials before
    they expire; asking it on every stream means a long-lived agent never signs with stale ones."""

    def __init__(self, session: boto3.Session | None = None) -> None:
        self._session = session or boto3.Session()

    async def get_identity(self, *, properties: Any) -> AWSCredentialsIdentity:
        credentials = self._session.get_credentials()
        if credentials is None:
            raise TTSConnectionError("no AWS credentials found by boto3's default chain")
        frozen = await asyncio.to_thread(credentials.get_frozen_credentials)
        return AWSCredentialsIdentity(access_key_id=frozen.access_key, secret_access_key=frozen.secret_key,
                                      session_token=frozen.token)

    async def invalidate(self) -> None:
        return None


def _crt_transport(ca_file: Path | None) -> AWSCRTHTTPClient:
    transport = AWSCRTHTTPClient(client_config=AWSCRTHTTPClientConfig(force_http_2=True))
    if ca_file is not None:
        # Trusting a private CA (the local stand-in's) has no public option in smithy-http yet:
        # its CRT client builds its TLS context in the constructor, so replace that context here.
        options = awscrt.io.TlsContextOptions()
        options.override_default_trust_store_from_path(None, str(ca_file))
        transport._tls_ctx = awscrt.io.ClientTlsContext(options)
    return transport


class SageMakerTransport:
    """One bidirectional stream. ``on_broken`` is called when the stream fails with an I/O error (its
    HTTP/2 connection may be gone), so the next stream is opened on a new connection."""

    def __init__(self, stream: Any, receiver: Any, on_broken: Callable[[], None] = lambda: None) -> None:
        self._stream = stream
        self._receiver = receiver
        self._on_broken = on_broken
        self._input_ended = False
        self._closed = False

    async def send(self, message: str) -> None:
        if self._closed:
            raise TransportClosed("the stream is closed")
        part = RequestPayloadPart(bytes_=message.encode("utf-8"), data_type="UTF8")
        try:
            await self._stream.input_stream.send(RequestStreamEventPayloadPart(value=part))
        except Exception as exc:  # the CRT stream raises its own error types once the stream is gone
            raise TransportClosed(f"sending failed: {exc}") from exc

    async def receive(self) -> str | bytes:
        try:
            event = await self._receiver.receive()
        except Exception as exc:  # modeled stream errors (ModelStreamError, InternalStreamFailure) and I/O errors
            if not isinstance(exc, CallError):
                self._on_broken()
            raise TransportClosed(f"{type(exc).__name__}: {exc}") from exc
        if event is None:
            raise TransportClosed(None)
        if not isinstance(event, ResponseStreamEventPayloadPart):
            raise TransportClosed(f"SageMaker stream error: {event}")
        part = event.value
        payload = part.bytes_ or b""
        return payload.decode("utf-8") if part.data_type == "UTF8" else payload

    async def end_input(self) -> None:
        """End the request body (the SDK sends the empty envelope) while the response goes on."""
        if not self._input_ended:
            self._input_ended = True
            try:
                await self._stream.input_stream.close()
            except Exception as exc:  # the CRT stream raises its own error types once the stream is gone
                raise TransportClosed(f"ending input failed: {exc}") from exc

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                await self._stream.close()
            except Exception as exc:  # closing a broken stream may raise; it is gone either way
                log.debug("closing the SageMaker stream: %s", exc)


@dataclass
class SageMakerConnector:
    """Opens TTS session transports to one SageMaker endpoint; one HTTP/2 client is shared until a
    stream or an open fails below the API (a refused or dropped connection): then the next open
    starts a new client. (The CRT client, once its connection has been refused or dropped, was seen
    to leave every later open unanswered even after the endpoint was back.)"""

    endpoint_name: str
    region: str
    endpoint_uri: str | None = None
    """Overrides ``default_endpoint_uri(region)``, e.g. for the local stand-in."""
    ca_file: Path | None = None
    """A private CA to trust (the local stand-in's certificate authority); None trusts the system's."""
    open_timeout: float = DEFAULT_OPEN_TIMEOUT
    open_attempts: int = DEFAULT_OPEN_ATTEMPTS
    open_backoff: float = DEFAULT_OPEN_BACKOFF
    credentials: Boto3CredentialsResolver | None = None

    def __post_init__(self) -> None:
        self._client: AsyncSageMakerRuntimeHTTP2Client | None = None
        self._client_lock = asyncio.Lock()

    async def _get_client(self) -> AsyncSageMakerRuntimeHTTP2Client:
        async with self._client_lock:
            if self._client is None:
                config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
                    endpoint_uri=self.endpoint_uri or default_endpoint_uri(self.region), region=self.region,
                    transport=_crt_transport(self.ca_file),
                    aws_credentials_identity_resolver=self.credentials or Boto3CredentialsResolver(),
                    max_attempts=1)  # opening is retried here, with the errors it makes sense for
                self._client = AsyncSageMakerRuntimeHTTP2Client(config=config)
            return self._client

    def _discard_client(self) -> None:
        if self._client is not None:
            log.info("discarding the SageMaker HTTP/2 client after a connection failure; the next stream opens anew")
            self._client = None

    async def __call__(self) -> SageMakerTransport:
        client = await self._get_client()
        request = InvokeEndpointWithBidirectionalStreamInput(endpoint_name=self.endpoint_name)
        last_error = ""
        for attempt in range(1, self.open_attempts + 1):
            if attempt > 1:
                await asyncio.sleep(self.open_backoff * 2 ** (attempt - 2))
                client = await self._get_client()
            try:
                stream = await asyncio.wait_for(client.invoke_endpoint_with_bidirectional_stream(request),
                                                self.open_timeout)
                _, receiver = await asyncio.wait_for(stream.await_output(), self.open_timeout)
                return SageMakerTransport(stream, receiver, self._discard_client)
            except TimeoutError:
                last_error = f"no answer within {self.open_timeout} s"
                self._discard_client()
            except CallError as exc:  # the service answered: the connection works
                last_error = f"{type(exc).__name__}: {exc}"
                if not _retryable(exc):
                    break
            except Exception as exc:  # CRT connection errors (refused, TLS) have their own types
                last_error = f"{type(exc).__name__}: {exc}"
                self._discard_client()
            log.warning("opening a SageMaker stream to %s failed (attempt %d of %d): %s", self.endpoint_name,
                        attempt, self.open_attempts, last_error)
        raise TTSConnectionError(f"cannot open a bidirectional stream to SageMaker endpoint {self.endpoint_name!r}: "
                                 f"{last_error}")


def _retryable(error: CallError) -> bool:
    """Throttling, a container that refused the stream (424 ModelError) and server faults."""
    return isinstance(error, ModelError) or getattr(error, "fault", None) == "server" or "Throttling" in str(error)

