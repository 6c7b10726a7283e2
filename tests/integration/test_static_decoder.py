"""The decoder quantized statically (``tts_server.static_decoder``): what the engine runs by default,
prepared reproducibly from the split model with only the named convolutions changed; a decoder it
cannot be made from, or a cache it cannot be written to, leaves the model's own decoder running.
That it is heard as the model's is measured by ``bench engine`` (its quick run is in
``test_bench``) and guarded through the server by ``test_intelligibility``."""

from __future__ import annotations

import logging

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tts_server import engine as engine_module
from tts_server.engine import KokoroEngine
from tts_server.model_files import ensure_model, file_digest, split_at_decoder, with_durations
from tts_server.static_decoder import STATIC_CONVS, NotQuantizable, float_convs, prepare, static_path

DECODER_CONVOLUTIONS = 69
"""In the packaged decoder: 68 quantized dynamically (``ConvInteger``) and ``conv_post`` in float."""


def model_decoder():
    return split_at_decoder(with_durations(ensure_model()))[1]


def test_the_engine_runs_the_decoder_with_the_named_convolutions_quantized_statically(engine):
    assert engine.decoder_path == static_path(model_decoder())
    graph = onnx.load(str(engine.decoder_path)).graph
    producers = {output: node.op_type for node in graph.node for output in node.output}
    static = [node.name for node in graph.node if node.op_type == "Conv"
              and producers.get(node.input[0]) == producers.get(node.input[1]) == "DequantizeLinear"]
    assert len(static) == 6 * len(STATIC_CONVS) == 30 and all(name.startswith(STATIC_CONVS) for name in static)
    assert all(any(name.startswith(prefix) for name in static) for prefix in STATIC_CONVS)
    convolutions = [node for node in graph.node if node.op_type in ("Conv", "ConvInteger")]
    assert len(convolutions) == DECODER_CONVOLUTIONS, "no convolution lost or added"
    assert sum(node.op_type == "ConvInteger" for node in convolutions) == DECODER_CONVOLUTIONS - 1 - 30, \
        "the others as the model has them"


def test_the_preparation_gives_the_same_file_again(engine, tmp_path, monkeypatch):
    monkeypatch.setattr(engine_module, "static_path", lambda decoder: tmp_path / static_path(decoder).name)
    again = KokoroEngine.load(threads=2)
    assert again.decoder_path == tmp_path / engine.decoder_path.name
    assert file_digest(again.decoder_path) == file_digest(engine.decoder_path)
    assert again.decoder_path.read_bytes() == engine.decoder_path.read_bytes()


def test_the_dequantized_convolutions_compute_what_the_model_does(engine, tmp_path):
    model = onnx.load(str(model_decoder()))
    assert float_convs(model) == DECODER_CONVOLUTIONS - 1
    assert not any(node.op_type == "ConvInteger" for node in model.graph.node)
    onnx.save(model, str(tmp_path / "float.onnx"))
    feeds = engine.feeds(engine.phonemize("The birch canoe slid on the smooth planks.")[0].phonemes,
                         engine.default_voice)
    prediction = engine.renderer.predict(feeds)
    inputs = prediction.window(0, prediction.frames, None)
    dynamic, floated = (ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(["audio"], inputs)[0]
                        for path in (model_decoder(), tmp_path / "float.onnx"))
    assert dynamic.shape == floated.shape
    # the model's int8 rounding is all that differs (measured 14.3 dB); a wrong scale or a lost bias is far below 0
    signal_to_difference = 10 * np.log10(np.sum(dynamic ** 2) / np.sum((dynamic - floated) ** 2))
    assert signal_to_difference > 10, signal_to_difference
    with pytest.raises(NotQuantizable, match="no dynamically quantized convolution"):
        prepare(tmp_path / "float.onnx", tmp_path / "static.onnx", lambda: iter(()))
    assert not (tmp_path / "static.onnx").exists()


def test_a_cache_it_cannot_write_to_leaves_the_models_decoder_running(tmp_path, monkeypatch, caplog):
    blocked = tmp_path / "a-file-not-a-directory"
    blocked.write_text("")
    monkeypatch.setattr(engine_module, "static_path", lambda decoder: blocked / decoder.name)
    with caplog.at_level(logging.WARNING, logger="tts_server.engine"):
        running = KokoroEngine.load(threads=1)
    assert running.decoder_path == model_decoder()
    assert "the decoder cannot be quantized statically" in caplog.text
    assert len(b"".join(running.synthesize("Hello."))) > 24_000 * 2 * 0.2, "it speaks"
    assert KokoroEngine.load(threads=1, static_decoder=False).decoder_path == model_decoder()
