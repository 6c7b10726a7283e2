"""PCM -> the caller's audio format, as ONE continuous stream per answer (``agent.audio_encoding``).

Guarantees: every other frame passes through in order; each ``PcmFrame`` becomes one
``AudioFrame`` (its ``data`` may be empty while the encoder fills a frame); before ``ModelDone`` the
encoder's last bytes (and a container's end) come out once, tagged with the last chunk that had
audio. PCM at another sample rate than the encoder's is a ``tts_failed`` error, not noise. The
encoder is closed however the answer ends.
"""

from __future__ import annotations

from agent.audio_encoding import StreamEncoder
from agent.pipeline.frames import AudioFrame, ErrorFrame, FrameQueue, ModelDone, PcmFrame
from agent.pipeline.stage import Stage
from agent.tts_client import TTSError


class AudioStage(Stage):
    name = "audio"

    def __init__(self, fmt: str) -> None:
        self._encoder = StreamEncoder(fmt)

    async def process(self, inbox: FrameQueue, outbox: FrameQueue) -> None:
        index, encoded_any = 0, False
        try:
            while True:
                frame = await inbox.get()
                if isinstance(frame, PcmFrame):
                    if frame.sample_rate != self._encoder.sample_rate:
                        raise TTSError("bad_audio", f"the TTS server sent {frame.sample_rate} Hz audio; the agent "
                                                    f"expects {self._encoder.sample_rate} Hz")
                    index, encoded_any = frame.index, True
                    await outbox.put(AudioFrame(index, self._encoder.encode(frame.pcm), len(frame.pcm)))
                    continue
                if isinstance(frame, ModelDone) and encoded_any:
                    await outbox.put(AudioFrame(index, self._encoder.finish(), 0))
                await outbox.put(frame)
                if isinstance(frame, (ModelDone, ErrorFrame)):
                    return
        finally:
            self._encoder.close()

    async def stop(self) -> None:
        self._encoder.close()
