"""The server side of one TTS session as a state machine, with no I/O.

Feed it each client message (:meth:`ServerSession.receive`); it answers with what to do: a reply
to send at once, a job to synthesize in its turn, or the end of input. As the server works through
a job it asks the machine for each frame to send (:meth:`start`, :meth:`audio`, :meth:`complete`,
:meth:`fail`); the machine returns ``None`` for whatever must no longer be sent. The Starlette
session (``tts_server.session``) drives it; so can a test, without a socket.

Guarantees:

- Every synthesize request gets exactly one final reply, ``synthesis_complete`` or ``error``, in
  the order the requests arrived; a request refused for its content (bad speed, unknown voice) is
  answered in its turn too. Two errors are answered at once instead: ``queue_full`` (more than
  ``max_queued`` requests waiting), and an error for a message that names no request.
- ``cancel`` marks every unanswered request cancelled: no more of their audio is sent, and each is
  answered ``cancelled`` in its turn.
- After any error the session goes on.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from tts_protocol import messages as m


@dataclass(eq=False)
class Job:
    """One synthesize request (or a refusal to answer in its turn) on its way through a session."""

    request: m.Synthesize | m.ProtocolError
    cancelled: bool = False
    answered: bool = False

    @property
    def request_id(self) -> str:
        assert self.request.request_id is not None
        return self.request.request_id


@dataclass(frozen=True)
class Reply:
    """Send this text frame now."""

    text: str


@dataclass(frozen=True)
class EndOfInput:
    """The client asked to close: finish the jobs already queued, then close."""


Action = Reply | Job | EndOfInput


@dataclass
class ServerSession:
    """``max_queued``: jobs one session may have waiting (not yet begun); beyond it a request is
    answered ``queue_full`` at once instead of growing memory."""

    max_queued: int = 64
    _unanswered: list[Job] = field(default_factory=list)
    _waiting: int = 0
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    closing: bool = False

    @property
    def busy(self) -> bool:
        """Some request still awaits its final reply (the client is waiting, not idle)."""
        return bool(self._unanswered)

    def receive(self, payload: str | bytes) -> Action | None:
        """What one client message asks for; ``None`` when it only changes state (``cancel``)."""
        if self.closing:
            return Reply(m.encode_error(None, m.BAD_REQUEST, "the session is closing"))
        try:
            message = m.parse_client_message(payload, default_request_id=f"req-{next(self._ids)}")
        except m.ProtocolError as exc:
            if exc.request_id is None:
                return Reply(m.encode_error(None, exc.code, exc.message))
            return self._queue(Job(exc))  # a refused request is answered in its turn, like any other
        if isinstance(message, m.Close):
            self.closing = True
            return EndOfInput()
        if isinstance(message, m.Cancel):
            for job in self._unanswered:
                job.cancelled = True
            return None
        return self._queue(Job(message))

    def _queue(self, job: Job) -> Action:
        if self._waiting >= self.max_queued:
            return Reply(m.encode_error(job.request_id, m.QUEUE_FULL,
                                        f"{self.max_queued} requests are already waiting"))
        self._waiting += 1
        self._unanswered.append(job)
        return job

    def begin(self, job: Job) -> None:
        """The server takes ``job`` up: it no longer counts as waiting."""
        self._waiting -= 1

    def start(self, job: Job, sample_rate: int = m.SAMPLE_RATE) -> str | None:
        return None if job.cancelled or job.answered else m.encode_synthesis_start(job.request_id, sample_rate)

    def words(self, job: Job, words: tuple[m.Word, ...] | list[m.Word]) -> list[str]:
        """The ``words`` messages to send for these words of ``job`` (none once it may not speak)."""
        return [] if job.cancelled or job.answered else m.encode_words(job.request_id, words)

    def audio(self, job: Job, frame: bytes) -> bytes | None:
        return None if job.cancelled or job.answered else frame

    def complete(self, job: Job, **stats: object) -> str | None:
        return self._answer(job, m.encode_synthesis_complete(job.request_id, **stats))

    def fail(self, job: Job, code: str, message: str) -> str | None:
        return self._answer(job, m.encode_error(job.request_id, code, message))

    def refusal(self, job: Job) -> str | None:
        """The final reply of a job whose request was refused for its content."""
        assert isinstance(job.request, m.ProtocolError)
        return self.fail(job, job.request.code, job.request.message)

    def _answer(self, job: Job, final: str) -> str | None:
        """The job's one final reply (``cancelled`` if it was), or None once it has had it."""
        if job.answered:
            return None
        job.answered = True
        self._unanswered.remove(job)
        return m.encode_error(job.request_id, m.CANCELLED, "cancelled") if job.cancelled else final
