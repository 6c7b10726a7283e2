"""The TTS session wire protocol (leg 3 of the design), with no I/O, in the manner of the
``websockets`` library's ``protocol.py``: bytes and messages in, events and messages out.

- ``messages``: every literal, code and limit, the route path, encoding and parsing;
- ``client``: the client side of a session as a state machine (``agent.tts_client`` drives it);
- ``server``: the server side of a session as a state machine (``tts_server.session`` drives it);
- ``pcm``: the audio format (and where speech starts in it).

Client -> server, one JSON object per message, as a text frame or as UTF-8 bytes in a binary frame
(SageMaker delivers every client message as a binary frame, so the server must accept both):

- ``{"type": "synthesize", "request_id", "text", "voice"?, "speed"?, "format"?}``
  (an object with ``text`` and no ``type`` also means synthesize)
- ``{"type": "cancel"}``: drop queued requests and stop the current one's audio
- ``{"type": "close"}``: finish what is queued, then close

Server -> client, per request, in the order the requests were sent:

- ``{"type": "synthesis_start", "request_id", "sample_rate", "format"}``
- zero or more binary frames of audio (raw PCM16 little-endian mono at ``sample_rate``), each
  stretch of them preceded by ``{"type": "words", "request_id", "words": [{"word", "start_ms",
  "end_ms"}, ...]}`` (from a server whose model reports durations): when each word that audio
  speaks starts and ends, in milliseconds of the request's audio. The words come before their
  audio so that a caption can be shown as the sound begins
- ``{"type": "synthesis_complete", "request_id", ...timings and sizes}``
- or, instead of the complete message, ``{"type": "error", "request_id", "code", "message"}``.
  An error always leaves the session usable. An error whose ``request_id`` is ``None`` concerns a
  message that could not be tied to any request (for example, one that is not JSON).

Control or audio is decided by parsing the whole payload as a JSON object with a known ``type``
(:func:`parse_server_message`), never by looking at its first byte: PCM data can begin with ``{``.
"""

from tts_protocol.messages import *  # noqa: F403
from tts_protocol.messages import __all__ as _messages
from tts_protocol.pcm import SAMPLE_WIDTH, SPEECH_DBFS, pcm16_seconds, pcm16_to_wav, speech_onset

__all__ = [*_messages, "SAMPLE_WIDTH", "SPEECH_DBFS", "pcm16_seconds", "pcm16_to_wav", "speech_onset"]
