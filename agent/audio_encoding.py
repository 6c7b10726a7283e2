"""The caller's audio formats, each encoded as ONE continuous stream per answer.

The TTS session always carries raw PCM16 (no decode on the agent, no per-sentence container).
The agent encodes an answer's PCM, sentence after sentence, into a single stream: one header at
the start, no gap and no second header between sentences, so a player can start on the first
chunk. Encoders come from FFmpeg through PyAV; the containers are written to a non-seekable sink
and flushed as they go:

- ``pcm16``: raw signed 16-bit little-endian mono, passed through untouched (the default)
- ``wav``: a streaming WAV (RIFF and data sizes 0xFFFFFFFF, as FFmpeg writes to a pipe)
- ``mp3``: MPEG-1 layer III by LAME, 48 kbps
- ``aac``: AAC-LC, 32 kbps, in fragmented MP4 (an init segment, then ``moof``/``mdat`` fragments)
- ``opus``: Opus at 24 kHz in Ogg, 32 kbps, a page every 100 ms
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import tts_protocol


@dataclass(frozen=True)
class Format:
    name: str
    media_type: str
    container: str | None = None
    codec: str | None = None
    bit_rate: int | None = None
    """The encoder's target, the bit rate the format is labelled with."""
    options: dict[str, str] = field(default_factory=dict)
    """Muxer options: how the container streams to a non-seekable sink."""
    extension: str = ""
    media_marker: bytes | None = None
    """Bytes that show the container has written media, for containers whose header comes out
    alone (fMP4's init segment): the header is held back and sent with the first media, so the
    first audio event is always playable."""
    delay_samples: int = 0
    """Samples of silence a decoder plays before the first sample of the PCM: the encoder's delay,
    which the stream does not tell the decoder to trim (LAME's for MP3, AAC's priming in this fMP4;
    Ogg Opus trims its pre-skip). Measured by encoding a tone burst and decoding it with FFmpeg
    (``tests/unit/test_audio_encoding.py`` measures it again); word timings are shifted by it."""


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("pcm16", "audio/L16;rate=24000", extension="pcm"),
    Format("wav", "audio/wav", "wav", "pcm_s16le", extension="wav"),
    Format("mp3", "audio/mpeg", "mp3", "libmp3lame", 48_000, extension="mp3", delay_samples=1105),
    Format("aac", "audio/mp4", "mp4", "aac", 32_000, extension="m4a",
           # Fragments of at most 200 ms, the init segment first: playable while it grows.
           options={"movflags": "frag_keyframe+empty_moov+default_base_moof", "frag_duration": "200000"},
           media_marker=b"moof", delay_samples=1024),
    Format("opus", "audio/ogg;codecs=opus", "ogg", "libopus", 32_000, extension="opus",
           options={"page_duration": "100000"}),
)}
DEFAULT_FORMAT = tts_protocol.FORMAT_PCM16


class _Sink:
    """A write-only, non-seekable file for FFmpeg's muxer: what it writes is taken by the encoder."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def write(self, data: bytes) -> int:
        self._buffer += data
        return len(data)

    def seekable(self) -> bool:
        return False

    def peek(self) -> bytes:
        return bytes(self._buffer)

    def take(self) -> bytes:
        data = bytes(self._buffer)
        self._buffer.clear()
        return data


class StreamEncoder:
    """PCM16 in (any chunking), the format's bytes out, as one continuous stream.

    :meth:`encode` returns what the encoder has ready (possibly nothing: encoders work on frames);
    :meth:`finish` flushes the encoder and the container and returns the last bytes.
    """

    def __init__(self, fmt: str = DEFAULT_FORMAT, sample_rate: int = tts_protocol.SAMPLE_RATE) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown audio format {fmt!r}; one of {', '.join(FORMATS)}")
        self.format = FORMATS[fmt]
        self.sample_rate = sample_rate
        self._odd = b""  # half a sample left over from a chunk of odd length
        self._samples = 0
        self._finished = False
        self._held = self.format.media_marker is not None
        self._container = None
        if self.format.container is not None:
            import av

            self._sink = _Sink()
            self._container = av.open(self._sink, mode="w", format=self.format.container,
                                      options=dict(self.format.options))
            self._stream = self._container.add_stream(self.format.codec, rate=sample_rate, layout="mono")
            if self.format.bit_rate:
                self._stream.bit_rate = self.format.bit_rate

    def encode(self, pcm: bytes) -> bytes:
        if self._finished:
            raise RuntimeError("the stream is finished")
        data = self._odd + pcm
        whole = len(data) - len(data) % tts_protocol.SAMPLE_WIDTH
        data, self._odd = data[:whole], data[whole:]
        if self._container is None:
            return data
        if not data:
            return b""
        import av

        samples = np.frombuffer(data, dtype="<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = self.sample_rate
        frame.pts = self._samples
        self._samples += samples.shape[1]
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        return self._take()

    def _take(self) -> bytes:
        if self._held:
            if self.format.media_marker not in self._sink.peek():
                return b""
            self._held = False
        return self._sink.take()

    def finish(self) -> bytes:
        """The stream's last bytes; a half sample left over is an error, not silently dropped."""
        if self._finished:
            return b""
        self._finished = True
        if self._odd:
            raise ValueError("the PCM16 stream ended in the middle of a sample")
        if self._container is None:
            return b""
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        return self._sink.take()

    def close(self) -> None:
        """Release the encoder without finishing the stream (an abandoned answer)."""
        if not self._finished and self._container is not None:
            self._finished = True
            self._container.close()
