"""The encoder as an ONNX Runtime graph: exported from the torch model once per model, pooling and
quantization, checked against torch, and kept in a cache directory that every index and process shares.

Why: on this machine ONNX Runtime encodes 1.4x faster than torch in fp32 and its int8 graph 1.2x faster than
torch's int8 and closer to fp32; a short query takes 4 ms instead of 12 (1 ms in int8), and a process that only
queries never imports torch. The graph includes the pooling and normalisation, so it returns sentence vectors.

int8 (benchmarks/results/determinism.md): weights per output channel, activations per row (token) with a scale
from that row alone, so a text's vector does not depend on what is batched with it (to 1.5e-7, fp32's own
jitter). ONNX Runtime's quantize_dynamic, used before, takes one activation scale per batch: a vector moved by
up to 0.04 with its batch. Per row is as fast and closer to fp32 (mean cosine 0.9976 against 0.9937)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..settings import Pooling, Quantize
from ..storage.files import atomic_path
from .backend import EncoderBackend, Int8Method
from .model import weights_file
from .sessions import one_off_session, release, session
from .tokenizer import load_tokenizer, padded
from .torch_backend import embed, load_model

log = logging.getLogger(__name__)

Tokenize = Callable[[list[str]], list[list[int]]]

EXPORT_VERSION = 3  # bump when the exported graph changes, so caches are not reused (2, 3: int8 per row)
CACHE_ENV = "SEMSEARCH_CACHE"
# Texts the exported graph must encode as torch does: padding in one batch, and one longer than any trace.
PROBE_TEXTS = ["A man is playing a guitar.", "short", "word " * 600]
AGREEMENT = 1e-4  # largest difference from torch's vectors an fp32 graph may show (seen: about 1e-6)
# Part of the advice ONNX Runtime's quantize_dynamic logs for a model not run through its pre-processing
# ("Please consider to run pre-processing before quantization. Refer to example: ..." in 1.32); the graph is
# already what ORT optimises, so the advice is noise to a user.
PREPROCESS_ADVICE = "pre-processing before quantization"
# Largest difference a per-row int8 graph may show between a text encoded alone and in a padded batch (seen:
# 1.5e-7, as fp32; per batch, 0.04).
PER_TEXT = 1e-5


class ExportError(ModelError):
    """The model could not be turned into an ONNX graph that encodes as it does (use the torch backend)."""


def cache_directory() -> Path:
    """$SEMSEARCH_CACHE, else $XDG_CACHE_HOME/semsearch, else ~/.cache/semsearch."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "semsearch"


def graph_path(
    model_path: Path,
    pooling: Pooling | str,
    normalize: bool,
    quantize: Quantize | str,
    int8_method: Int8Method | str = Int8Method.PER_ROW,
) -> Path:
    """Where the graph for these settings is cached. The key names the model directory and its weights'
    size and modification time: a model changed in place gets a new graph."""
    int8 = Quantize(quantize) == Quantize.INT8
    weights = weights_file(model_path)
    stat = weights.stat() if weights is not None else None
    key = json.dumps(
        [
            EXPORT_VERSION,
            str(model_path.resolve()),
            (model_path / "config.json").read_text(),
            stat.st_size if stat else None,
            stat.st_mtime_ns if stat else None,
            Pooling(pooling).value,  # the plain names, as in the keys of graphs already cached
            normalize,
            Quantize(quantize).value,
            Int8Method(int8_method).value if int8 else None,
        ]
    )
    return cache_directory() / "onnx" / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.onnx"


def ensure_graph(
    model_path: Path,
    pooling: Pooling | str,
    normalize: bool,
    quantize: Quantize | str,
    tokenize: Tokenize,
    int8_method: Int8Method | str = Int8Method.PER_ROW,
) -> Path:
    """The cached graph, exported (and quantized) first if it is not there yet. `tokenize` gives token ids
    for the checks. Raises ExportError if the model cannot be exported faithfully."""
    target = graph_path(model_path, pooling, normalize, quantize, int8_method)
    if target.is_file():
        return target
    # The fp32 graph is kept too: an int8 index compares against it once (quantize_fidelity), and another
    # int8 method is quantized from it without exporting again.
    full = graph_path(model_path, pooling, normalize, Quantize.NONE)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            fp32 = full if full.is_file() else Path(scratch) / "fp32.onnx"
            if fp32 != full:
                try:
                    _export(model_path, Pooling(pooling), normalize, tokenize, fp32)
                finally:
                    load_model.cache_clear()  # the torch model was only needed for the export
            if quantize == Quantize.INT8:
                with atomic_path(target) as tmp:
                    _quantize(fp32, tmp, Int8Method(int8_method))
                    if int8_method == Int8Method.PER_ROW:
                        _check_per_text(model_path, tokenize, tmp)
            if fp32 != full:
                with atomic_path(full) as tmp:
                    os.replace(fp32, tmp)
    except OSError as error:  # the cache cannot be written: this model is then encoded by torch
        raise ExportError(
            f"cannot write the encoder's ONNX graph under {target.parent} ({error}); set {CACHE_ENV} to a "
            "writable directory, or use --backend torch"
        ) from None
    log.info("exported the encoder to %s", target)
    return target


def _export(model_path: Path, pooling: Pooling, normalize: bool, tokenize: Tokenize, target: Path) -> None:
    import torch

    model = load_model(str(model_path), Quantize.NONE)

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return embed(self.model, input_ids, attention_mask, pooling, normalize)

    ids, mask = padded(tokenize(PROBE_TEXTS[:2]))
    inputs = (torch.from_numpy(ids), torch.from_numpy(mask))
    axes = {"batch": 0, "tokens": 1}
    try:
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            # the tracer's notes on Python conditionals, and the legacy exporter's deprecation
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Pooled().eval(),
                inputs,
                str(target),
                input_names=["input_ids", "attention_mask"],
                output_names=["vectors"],
                dynamic_axes={
                    "input_ids": {v: k for k, v in axes.items()},
                    "attention_mask": {v: k for k, v in axes.items()},
                    "vectors": {0: "batch"},
                },
                opset_version=17,
                dynamo=False,  # the tracing exporter: no extra dependencies, handles these models
            )
    except Exception as error:  # any failure of the exporter means: this model needs the torch backend
        raise ExportError(
            f"{model_path}: cannot export the model to ONNX ({type(error).__name__}: {error}); "
            "use --backend torch"
        ) from None
    _check_agreement(model_path, pooling, normalize, tokenize, target)


def _check_agreement(
    model_path: Path, pooling: Pooling, normalize: bool, tokenize: Tokenize, graph: Path
) -> None:
    """The graph must give torch's vectors, batched with padding and beyond the traced length."""
    import torch

    model = load_model(str(model_path), Quantize.NONE)
    ids, mask = padded(tokenize(PROBE_TEXTS))
    with torch.inference_mode():
        want = embed(model, torch.from_numpy(ids), torch.from_numpy(mask), pooling, normalize).numpy()
    got = one_off_session(str(graph)).run(None, {"input_ids": ids, "attention_mask": mask})[0]
    difference = float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))
    if not difference <= AGREEMENT:
        raise ExportError(
            f"{model_path}: the ONNX export does not encode as the model does (difference {difference:.2g}); "
            "use --backend torch"
        )


def _quantize(fp32: Path, target: Path, method: Int8Method = Int8Method.PER_ROW) -> None:
    if method == Int8Method.PER_ROW:
        _quantize_per_row(fp32, target)
        return
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _dropping_root_message(PREPROCESS_ADVICE):
        # Per channel, int8 weights: mean cosine to fp32 0.994 on WordNet glosses (0.980 per tensor in torch).
        quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True)


def _quantize_per_row(fp32: Path, target: Path) -> None:
    """Each MatMul by a constant 2-D weight (a Linear layer), rewritten in int8: weights symmetric per output
    channel; each row of its input quantized with its own scale, max |x| / 127, as uint8 around 128, so no
    row's values depend on another's. MatMulIntegerToFloat (uint8 x int8 with the weights' scales) then the
    rows' scales give the float output. Rows sharing an input (query, key, value) are quantized once."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(fp32))
    graph = model.graph
    weights = {tensor.name: tensor for tensor in graph.initializer}
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    added: dict[str, np.ndarray] = {  # shared constants
        "int8/127": np.array(127.0, np.float32),
        "int8/tiny": np.array(1e-12, np.float32),  # a row of zeros still gets a scale
        "int8/one": np.array(1.0, np.float32),
        "int8/zero_point": np.array(128, np.uint8),
        "int8/start": np.array([0], np.int64),
        "int8/end": np.array([-1], np.int64),
        "int8/rows_axis": np.array([1], np.int64),
    }
    # rows: input name -> the name prefix of its quantized rows, their scales and its leading dimensions
    nodes: list[onnx.NodeProto] = []
    rows: dict[str, str] = {}
    for node in graph.node:
        weight = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if weight is None or len(weight.dims) != 2:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weight).astype(np.float32)
        k, n = w.shape
        x = node.input[0]
        if x not in rows:
            p = f"int8/row{len(rows)}/"
            added[p + "shape2d"] = np.array([-1, k], np.int64)
            reduce_max = (
                helper.make_node("ReduceMax", [p + "abs"], [p + "max"], keepdims=0, axes=[1])
                if opset < 18  # axes became an input in opset 18
                else helper.make_node("ReduceMax", [p + "abs", "int8/rows_axis"], [p + "max"], keepdims=0)
            )
            nodes += [
                helper.make_node("Reshape", [x, p + "shape2d"], [p + "x"]),
                helper.make_node("Abs", [p + "x"], [p + "abs"]),
                reduce_max,
                helper.make_node("Max", [p + "max", "int8/tiny"], [p + "max_"]),
                helper.make_node("Div", [p + "max_", "int8/127"], [p + "scale"]),
                helper.make_node("Shape", [p + "scale"], [p + "count"]),
                helper.make_node("Expand", ["int8/zero_point", p + "count"], [p + "zero_points"]),
                helper.make_node(
                    "QuantizeLinear", [p + "x", p + "scale", p + "zero_points"], [p + "q"], axis=0
                ),
                helper.make_node("Unsqueeze", [p + "scale", "int8/rows_axis"], [p + "scale_column"]),
                helper.make_node("Shape", [x], [p + "shape"]),
                helper.make_node("Slice", [p + "shape", "int8/start", "int8/end"], [p + "leading"]),
            ]
            rows[x] = p
        p, m = rows[x], f"int8/matmul{len(nodes)}/"
        scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
        added[m + "weight"] = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        added[m + "weight_scale"] = scale.astype(np.float32)
        added[m + "width"] = np.array([n], np.int64)
        nodes += [
            helper.make_node(
                "MatMulIntegerToFloat",
                [p + "q", m + "weight", "int8/one", m + "weight_scale", "int8/zero_point"],
                [m + "y"],
                domain="com.microsoft",
            ),
            helper.make_node("Mul", [m + "y", p + "scale_column"], [m + "scaled"]),
            helper.make_node("Concat", [p + "leading", m + "width"], [m + "shape"], axis=0),
            helper.make_node("Reshape", [m + "scaled", m + "shape"], list(node.output)),
        ]
    used = {name for node in nodes for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + [numpy_helper.from_array(v, name) for name, v in added.items()])
    del graph.node[:]
    graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target))


def _check_per_text(model_path: Path, tokenize: Tokenize, graph: Path) -> None:
    """A per-row graph must encode each probe text alone as it does in one padded batch with the others."""
    ids, mask = padded(tokenize(PROBE_TEXTS))
    run = one_off_session(str(graph)).run
    batched = run(None, {"input_ids": ids, "attention_mask": mask})[0]
    for row, text_ids in enumerate(tokenize(PROBE_TEXTS)):
        alone_ids, alone_mask = padded([text_ids])
        alone = run(None, {"input_ids": alone_ids, "attention_mask": alone_mask})[0][0]
        difference = float(np.max(np.abs(alone - batched[row])))
        if not difference <= PER_TEXT:
            raise ExportError(
                f"{model_path}: the int8 graph's vectors depend on the batch (difference {difference:.2g}); "
                "use --quantize none or --backend torch"
            )


@contextlib.contextmanager
def _dropping_root_message(text: str) -> Iterator[None]:
    """Inside the block, drop the records logged straight on the root logger whose message contains
    `text`. The quantizer logs through `logging.warning`, the root logger itself: no named logger to
    silence. Records of named loggers only pass the root's handlers, not its filters, so they are untouched."""
    root = logging.getLogger()

    def keep(record: logging.LogRecord) -> bool:
        return text not in record.getMessage()

    # logging.warning() on a root logger without handlers would also call basicConfig, configuring the
    # process's logging for good; lend it, for the block, the handler Python writes to in that case anyway.
    lend = logging.lastResort if not root.handlers else None
    root.addFilter(keep)
    if lend is not None:
        root.addHandler(lend)
    try:
        yield
    finally:
        root.removeFilter(keep)
        if lend is not None:
            root.removeHandler(lend)


class OnnxBackend(EncoderBackend):
    """ONNX Runtime on the model exported once (faster; a query process never imports torch)."""

    concurrent = True  # a session's runs are safe from several threads at once

    def load(self) -> None:
        if self.graph is None:
            spec = self.spec
            tokenize = load_tokenizer(str(spec.path), spec.max_length)
            self.graph = ensure_graph(
                spec.path, spec.pooling, spec.normalize, spec.quantize, tokenize, spec.int8_method
            )

    def run(self, ids: np.ndarray, mask: np.ndarray, threads: int = 0) -> np.ndarray:
        return session(str(self.graph), threads).run(None, {"input_ids": ids, "attention_mask": mask})[0]

    def release(self) -> None:
        if self.graph is not None:
            release(str(self.graph))
            self.graph = None
