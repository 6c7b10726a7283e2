"""What a decoder plays of each caller format: the encoder's delay that word timings are shifted
by is the delay FFmpeg's decoder really plays before the first sample."""

from __future__ import annotations

import io

import av
import numpy as np
import pytest

from agent.audio_encoding import FORMATS, StreamEncoder

RATE = 24_000


def onset(fmt: str, at: int) -> float:
    """Encode silence with a 1 kHz burst at sample ``at``; where the decoded burst begins (samples at 24 kHz)."""
    pcm = np.zeros(2 * RATE, dtype="<i2")
    pcm[at:at + 480] = (16_000 * np.sin(2 * np.pi * 1_000 * np.arange(480) / RATE)).astype("<i2")
    encoder = StreamEncoder(fmt)
    data = encoder.encode(pcm.tobytes()) + encoder.finish()
    if fmt == "pcm16":
        decoded, rate = np.frombuffer(data, dtype="<i2").astype(float), RATE
    else:
        with av.open(io.BytesIO(data)) as container:
            frames = [frame for frame in container.decode(audio=0)]
        rate = frames[0].sample_rate
        decoded = np.concatenate([frame.to_ndarray()[0] for frame in frames]).astype(float)
        if np.abs(decoded).max() <= 1.5:
            decoded *= 32_767
    return int(np.argmax(np.abs(decoded) > 3_000)) * RATE / rate


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_delay_a_decoder_plays_first_is_the_formats_stated_delay(fmt):
    at = RATE
    assert onset(fmt, at) - at == pytest.approx(FORMATS[fmt].delay_samples, abs=2)
