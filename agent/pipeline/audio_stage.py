"""PCM -> the caller's audio format, as ONE continuous stream per answer (``agent.audio_encoding``).

Guarantees: every other frame passes through in order; each ``PcmFrame`` becomes one
``AudioFrame`` (its ``data`` may be empty while the encoder fills a frame); each ``WordsFrame``
moves from its chunk's timeline onto the answer's, as the caller plays it: the chunk starts where
the audio of the chunks before it ends, and a format whose decoder plays the encoder's delay first
(mp3, aac) shifts every word by that delay; before ``ModelDone`` the
encoder's last bytes (and a container's end) come out once, tagged with the last chunk that had
audio. PCM at another sample rate than the encoder's is a ``tts_failed`` error, not noise. The
encoder is closed however the answer ends.
"""

from __future__ import annotations

from dataclasses import replace

import tts_protocol
from agent.audio_encoding import StreamEncoder
from agent.pipeline.frames import AudioFrame, ErrorFrame, FrameQueue, ModelDone, PcmFrame, WordsFrame
from agent.pipeline.stage import Stage
from agent.tts_client import TTSError


class AudioStage(Stage):
    name = "audio"

    def __init__(self, fmt: str) -> None:
        self._encoder = StreamEncoder(fmt)

    async def process(self, inbox: FrameQueue, outbox: FrameQueue) -> None:
        index, encoded_any = 0, False
        samples, chunk_start = 0, {}  # PCM samples so far; where each chunk's audio starts
        try:
            while True:
                frame = await inbox.get()
                if isinstance(frame, (PcmFrame, WordsFrame)):
                    chunk_start.setdefault(frame.index, samples)
                if isinstance(frame, WordsFrame):
                    await outbox.put(self._on_answer_timeline(frame, chunk_start[frame.index]))
                    continue
                if isinstance(frame, PcmFrame):
                    samples += len(frame.pcm) // tts_protocol.SAMPLE_WIDTH
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

    def _on_answer_timeline(self, frame: WordsFrame, start_samples: int) -> WordsFrame:
        shift = (start_samples + self._encoder.format.delay_samples) * 1000 / self._encoder.sample_rate
        words = tuple(replace(word, start_ms=round(word.start_ms + shift, 1), end_ms=round(word.end_ms + shift, 1))
                      for word in frame.words)
        return WordsFrame(frame.index, words, timeline="answer", at=frame.at)
