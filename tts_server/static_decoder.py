"""The decoder with part of its generator quantized statically: 1.2-1.3x the decoder's throughput.

The packaged model quantizes its convolutions dynamically: before each one, ``DynamicQuantizeLinear``
measures the input's range on every call, then ``ConvInteger`` convolves in int8 and the result is
scaled back. On the 2-core machines this project is measured on, that runs no faster than float
convolutions (``docs/performance.md``). Quantized statically, a convolution's input range is fixed
once by running the model on calibration text, and ONNX Runtime fuses the convolution into one
``QLinearConv`` that does not measure anything at run time.

:func:`prepare` makes that decoder from the split model's (``model_files.split_at_decoder``):

1. each of the :data:`STATIC_CONVS` (a ``ConvInteger`` pattern: ``DynamicQuantizeLinear`` ->
   ``ConvInteger`` -> add the bias quantized at run time -> cast -> multiply by the combined scale)
   becomes a float ``Conv`` with the weights dequantized and the float bias (:func:`float_convs`);
2. ONNX Runtime's ``quantize_static`` quantizes those (QDQ, per-channel int8 weights, uint8
   activations, min/max ranges) on the decoder inputs the server itself would feed for
   :data:`CALIBRATION_TEXT` (every window, and every utterance whole). The decoder's other
   convolutions stay as the model has them.

Which convolutions: the generator's first-stage residual blocks and its two noise blocks (30 of the
decoder's 68 quantized ones). ``bench engine`` and the exploration recorded in ``docs/performance.md`` measured the
others: the generator's second-stage residual blocks (``resblocks.3-5``) quantized too make it
1.5-1.7x faster but are heard (word error rate 0.081 in windows against 0.066), and the decoder's
other 20 convolutions quantized ruin the audio.

The ranges come from running the model, so the file's digest is recorded beside it, not pinned: it
is the same on one machine every time, and may differ in the last bits of a range on another CPU.
The name carries a digest of the recipe (:data:`RECIPE`), so a changed recipe is prepared anew.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from tts_server.model_files import ModelFileError, write_verified
from tts_server.settings import DEFAULT_VOICE

log = logging.getLogger(__name__)

GENERATOR = "/decoder/decoder/generator/"
STATIC_CONVS = tuple(f"{GENERATOR}{block}/" for block in
                     ("resblocks.0", "resblocks.1", "resblocks.2", "noise_res.0", "noise_res.1"))
"""Name prefixes of the convolutions quantized statically (6 in each block: 30)."""
CALIBRATION_TEXT = (
    "The ferry leaves the harbour at seven fifteen every morning.",
    "Could you tell me where the nearest pharmacy is?",
    "Our quarterly revenue grew by twelve point four percent.",
    "Wow, that was the loudest thunderstorm I have ever heard!",
    "Please restart the router, then wait about thirty seconds.",
    "She read three chapters before the train reached Boston.",
    "The recipe needs two cups of flour and a pinch of salt.",
    "In nineteen sixty nine, two astronauts walked on the Moon.",
    "Yes.",
    "Turn left at the second light, and the museum is on your right.",
    "The package weighs four kilograms and costs nineteen dollars.",
    "Why does the sky look orange just after sunset?",
    "Engineers measured a latency of eight hundred milliseconds.",
    "Thank you for calling; your reference number is five one seven.",
    "The committee will meet again on Tuesday, the fourth of March.",
    "Fresh snow covered the quiet valley, and nothing moved at all.",
)
"""Text the ranges are measured on: plain sentences, questions, numbers said in words, a one-word
answer; written for this purpose, and none of the sentences the renders are measured on."""
CALIBRATION_VOICE = DEFAULT_VOICE
"""The packaged voice the calibration text is spoken in, whatever a deployment's default voice: the
prepared file is the same for every deployment, and an image prepares it once when it is built."""
RECIPE = hashlib.sha256("\n".join([*STATIC_CONVS, *CALIBRATION_TEXT, CALIBRATION_VOICE,
                                   "only those float, qdq per-channel u8s8 minmax"]).encode()).hexdigest()[:10]
STATIC_SUFFIX = f".static-{RECIPE}.onnx"


class NotQuantizable(ModelFileError):
    """The decoder has none of the convolutions this recipe quantizes (another export)."""


def static_path(decoder: Path) -> Path:
    """Where the statically quantized form of ``decoder`` is kept (beside it)."""
    return decoder.with_name(decoder.name.removesuffix(".onnx") + STATIC_SUFFIX)


def is_prepared(target: Path, decoder: Path) -> bool:
    sidecar = target.with_name(target.name + ".sha256")
    return target.is_file() and sidecar.is_file() and target.stat().st_mtime >= decoder.stat().st_mtime


def float_convs(model, prefixes: tuple[str, ...] = ("",)) -> int:  # noqa: ANN001 - onnx.ModelProto
    """Turn each ``ConvInteger`` pattern of ``model`` whose name starts with one of ``prefixes`` into
    a float ``Conv`` (in place); returns how many. The nodes only the patterns used are removed."""
    import onnx
    from onnx import numpy_helper

    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    readers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)

    def value(name: str) -> np.ndarray:
        return numpy_helper.to_array(initializers[name])

    converted, replaced = 0, set()
    for node in [node for node in graph.node if node.op_type == "ConvInteger" and node.name.startswith(prefixes)]:
        # With a bias: ConvInteger -> Add (the bias quantized at run time) -> Cast -> Mul; without: no Add.
        first = readers.get(node.output[0], [])
        add = first[0] if len(first) == 1 and first[0].op_type == "Add" else None
        cast = _only_reader(readers, (add or node).output[0], "Cast")
        scale = _only_reader(readers, cast.output[0], "Mul")
        weight = (value(node.input[1]).astype(np.float32) - value(node.input[3]).astype(np.float32)) \
            * value(_weight_scale(producer, scale))
        weight_name = f"{node.name}/float_weight"
        graph.initializer.append(numpy_helper.from_array(weight.astype(np.float32), weight_name))
        inputs = [producer[node.input[0]].input[0], weight_name]
        if add is not None:
            inputs.append(_bias_divide(producer, add).input[0])
        conv = onnx.helper.make_node("Conv", inputs, [scale.output[0]], name=node.name.removesuffix("_quant"))
        conv.attribute.extend(attribute for attribute in node.attribute if attribute.name != "auto_pad")
        replaced.update(id(item) for item in (node, add, cast, scale) if item is not None)
        graph.node.insert(list(graph.node).index(scale), conv)
        converted += 1
    kept = [node for node in graph.node if id(node) not in replaced]
    del graph.node[:]
    graph.node.extend(kept)
    _drop_unused(graph)
    return converted


def _only_reader(readers: dict[str, list], tensor: str, op_type: str):  # noqa: ANN202 - onnx.NodeProto
    found = readers.get(tensor, [])
    if len(found) != 1 or found[0].op_type != op_type:
        raise NotQuantizable(f"{tensor} is not read by one {op_type} alone: not the ConvInteger pattern")
    return found[0]


def _bias_divide(producer: dict, add):  # noqa: ANN001, ANN202 - onnx.NodeProto
    """The ``Div`` that quantizes the float bias (``Reshape(Cast(Floor(Div(bias, scale))))``)."""
    node = producer.get(add.input[1])
    for op_type in ("Reshape", "Cast", "Floor", "Div"):
        if node is None or node.op_type != op_type:
            raise NotQuantizable(f"{add.name}: the bias is not quantized as the pattern does it")
        if op_type != "Div":
            node = producer.get(node.input[0])
    return node


def _weight_scale(producer: dict, scale) -> str:  # noqa: ANN001 - onnx.NodeProto
    """The weight's scale: the initializer the combined scale multiplies the input's scale by."""
    combined = producer[scale.input[1]]
    return next(name for name in combined.input if name not in producer)


def _drop_unused(graph) -> None:  # noqa: ANN001 - onnx.GraphProto
    """Remove nodes none of whose outputs is read, and initializers no node reads."""
    outputs = {output.name for output in graph.output}
    while True:
        read = outputs | {name for node in graph.node for name in node.input}
        kept = [node for node in graph.node if any(output in read for output in node.output)]
        if len(kept) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(kept)
    used = [tensor for tensor in graph.initializer if tensor.name in read]
    del graph.initializer[:]
    graph.initializer.extend(used)


class _Feeds:
    """ONNX Runtime's calibration data reader over decoder inputs."""

    def __init__(self, feeds: Iterable[dict[str, np.ndarray]]) -> None:
        self._feeds: Iterator[dict[str, np.ndarray]] = iter(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def prepare(decoder: Path, target: Path, calibration: Callable[[], Iterable[dict[str, np.ndarray]]],
            progress: Callable[[str], None] | None = None) -> Path:
    """Write ``decoder`` quantized statically to ``target`` (digest recorded beside it), its ranges
    measured on the decoder inputs ``calibration()`` gives. Kept when already prepared."""
    if is_prepared(target, decoder):
        return target
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    model = onnx.load(str(decoder))
    converted = float_convs(model, STATIC_CONVS)
    if not converted:
        raise NotQuantizable(f"{decoder.name} has no dynamically quantized convolution: the recipe is for the "
                             f"packaged int8 model")
    names = [node.name for node in model.graph.node if node.op_type == "Conv" and node.name.startswith(STATIC_CONVS)]
    if len(names) != 6 * len(STATIC_CONVS):
        raise NotQuantizable(f"{decoder.name}: {len(names)} of the {6 * len(STATIC_CONVS)} convolutions to quantize")
    say = progress or log.info
    say(f"model: measuring the ranges of {len(names)} convolutions on {len(CALIBRATION_TEXT)} sentences")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".static-") as work:
        floated, quantized = Path(work) / "float.onnx", Path(work) / "static.onnx"
        onnx.save(model, str(floated))
        quantize_static(str(floated), str(quantized), _Feeds(calibration()), quant_format=QuantFormat.QDQ,
                        op_types_to_quantize=["Conv"], nodes_to_quantize=names, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
        data = quantized.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    write_verified(target, [data], digest, lambda found, size: (
        f"{target.name}: {size} bytes written with sha256 {found}, not the graph quantized"))
    say(f"model: {len(names)} decoder convolutions quantized statically, sha256 {digest[:12]}..., saved to {target}")
    return target
