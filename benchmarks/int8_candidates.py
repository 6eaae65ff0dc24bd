"""The int8 candidates of issue 11, measured on real text with the bundled model: is a text's vector the same
whatever it is batched with, how fast does each encode, and how close is it to fp32. Used by determinism.py
(section `candidates`); each graph is built here from the cached fp32 graph.

- fp32: the exported graph itself (the reference).
- dynamic: ONNX Runtime's quantize_dynamic, per-channel int8 weights, one activation scale per batch (before).
- dynamic, batches of 1: the same graph, every text encoded alone (the slow deterministic baseline).
- per-row: semsearch's int8 (onnx_backend._quantize_per_row): one symmetric activation scale per row (token).
- per-row asymmetric: a zero point per row as well, corrected after the integer product (one more pass).
- static QDQ / QOperator: quantize_static, per-channel weights, activation ranges calibrated once (MinMax) on
  fixed texts held out of the measured ones (220 WordNet glosses and SciFact abstracts), so fixed scales.
- MatMulNBits 8-bit: ORT's blockwise weight-only format. accuracy_level 4 computes in int8 (activations
  quantized per block of each row), 1 in fp32 (weights dequantized). ORT's MatMulNBitsQuantizer needs the
  onnx_ir package, not installed here, so the weights are packed with ORT's own quantize_matmul_8bits."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np

from semsearch.encoding import Encoder
from semsearch.encoding.onnx_backend import release
from semsearch.encoding.tokenizer import padded

ROW = "int8r/"  # names of the asymmetric rewrite's tensors


def read_texts(path: Path, start: int, count: int) -> list[str]:
    """Texts as ingest embeds them (title, then text) of `count` documents from line `start`."""
    out = []
    with open(path) as handle:
        for number, line in enumerate(handle):
            if number >= start + count:
                break
            if number >= start:
                record = json.loads(line)
                title = record.get("title")
                out.append(f"{title} {record['text']}" if title else record["text"])
    return out


def encoder_on(graph: Path, batch_size: int | None = None) -> Encoder:
    """The product's Encoder (tokenizer, length sorting, token-budget batches, threads) running `graph`."""
    encoder = Encoder(batch_size=batch_size)
    encoder._backend.graph = Path(graph)  # the onnx backend loads the graph it is given, else its own
    return encoder


# ---- building the candidate graphs ---------------------------------------------------------------------


def linear_flags(model) -> list[bool]:
    """For each node: is it a MatMul by a constant 2-D weight (a Linear layer)?"""
    dims = {tensor.name: len(tensor.dims) for tensor in model.graph.initializer}
    return [node.op_type == "MatMul" and dims.get(node.input[1]) == 2 for node in model.graph.node]


def build_static(fp32: Path, target: Path, calibration: list[str], quant_format: str) -> None:
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    tokenize = Encoder().tokenize
    model = onnx.load(str(fp32))

    class Reader(CalibrationDataReader):  # one text per batch: no padding in the ranges
        def __init__(self):
            self.rows = iter(tokenize(calibration))

        def get_next(self):
            ids = next(self.rows, None)
            return None if ids is None else dict(zip(["input_ids", "attention_mask"], padded([ids])))

    quantize_static(
        str(fp32),
        str(target),
        Reader(),
        quant_format=getattr(QuantFormat, quant_format),
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        nodes_to_quantize=[
            node.name for node, linear in zip(model.graph.node, linear_flags(model)) if linear
        ],
        calibrate_method=CalibrationMethod.MinMax,
    )


def build_nbits(fp32: Path, target: Path, accuracy_level: int, block: int) -> None:
    """Each Linear as MatMulNBits with 8-bit symmetric weights in blocks of `block` along K."""
    import onnx
    from onnx import helper, numpy_helper
    from onnxruntime.capi._pybind_state import quantize_matmul_8bits

    model, graph, weights, linear = loaded(fp32)
    nodes = []
    for node, rewrite in zip(list(graph.node), linear):
        if not rewrite:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        k, n = w.shape
        blocks = -(-k // block)
        w = np.ascontiguousarray(np.pad(w, ((0, blocks * block - k), (0, 0))))
        packed = np.zeros((n, blocks, block), np.uint8)
        scales = np.zeros((n, blocks), np.float32)
        quantize_matmul_8bits(packed, w, scales, np.zeros((n, blocks), np.uint8), block, n, k, True)
        name = node.input[1]
        graph.initializer.extend(
            [numpy_helper.from_array(packed, name + "_q8"), numpy_helper.from_array(scales, name + "_s")]
        )
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [node.input[0], name + "_q8", name + "_s"],
                list(node.output),
                domain="com.microsoft",
                K=k,
                N=n,
                bits=8,
                block_size=block,
                accuracy_level=accuracy_level,
            )
        )
    _replace_nodes(model, nodes)
    onnx.save(model, str(target))


def loaded(fp32: Path):
    """The fp32 graph, its initializers by name, and which of its nodes are Linear layers to rewrite."""
    import onnx

    model = onnx.load(str(fp32))
    return (
        model,
        model.graph,
        {tensor.name: tensor for tensor in model.graph.initializer},
        linear_flags(model),
    )


def build_per_row_asymmetric(fp32: Path, target: Path) -> None:
    """Per row with a zero point: q = round(x / s) + z, s = (max - min) / 255 of the row (0 included); the
    integer product uses zero point 0 and z x colsum(W) is taken off after, as MatMulInteger takes one zero
    point per tensor."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model, graph, weights, linear = loaded(fp32)
    constants = {
        "zero": np.array(0.0, np.float32),
        "one": np.array(1.0, np.float32),
        "tiny": np.array(1e-12, np.float32),
        "levels": np.array(255.0, np.float32),
        "zp0": np.array(0, np.uint8),
        "axis1": np.array([1], np.int64),
        "start": np.array([0], np.int64),
        "end": np.array([-1], np.int64),
    }
    added = {ROW + name: value for name, value in constants.items()}
    nodes, rows = [], {}

    def op(kind, inputs, output, **attributes):
        nodes.append(helper.make_node(kind, inputs, [output], **attributes))

    for node, rewrite in zip(list(graph.node), linear):
        if not rewrite:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        k, n = w.shape
        x = node.input[0]
        if x not in rows:
            p = f"{ROW}row{len(rows)}/"
            added[p + "2d"] = np.array([-1, k], np.int64)
            op("Reshape", [x, p + "2d"], p + "x")
            op("ReduceMax", [p + "x"], p + "max", axes=[1], keepdims=0)
            op("ReduceMin", [p + "x"], p + "min", axes=[1], keepdims=0)
            op("Max", [p + "max", ROW + "zero"], p + "max0")
            op("Min", [p + "min", ROW + "zero"], p + "min0")
            op("Sub", [p + "max0", p + "min0"], p + "range")
            op("Max", [p + "range", ROW + "tiny"], p + "range_")
            op("Div", [p + "range_", ROW + "levels"], p + "scale")
            op("Div", [p + "min0", p + "scale"], p + "zneg")
            op("Neg", [p + "zneg"], p + "zraw")
            op("Round", [p + "zraw"], p + "z")
            op("Cast", [p + "z"], p + "zp", to=TensorProto.UINT8)
            op("QuantizeLinear", [p + "x", p + "scale", p + "zp"], p + "q", axis=0)
            op("Unsqueeze", [p + "scale", ROW + "axis1"], p + "scale_col")
            op("Unsqueeze", [p + "z", ROW + "axis1"], p + "z_col")
            op("Shape", [x], p + "shape")
            op("Slice", [p + "shape", ROW + "start", ROW + "end"], p + "lead")
            rows[x] = p
        p, m = rows[x], f"{ROW}mm{len(nodes)}/"
        scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        added[m + "w"], added[m + "ws"] = q, scale.astype(np.float32)
        added[m + "colsum"] = (q.astype(np.int64).sum(axis=0) * scale).astype(np.float32)
        added[m + "n"] = np.array([n], np.int64)
        nodes.append(
            helper.make_node(
                "MatMulIntegerToFloat",
                [p + "q", m + "w", ROW + "one", m + "ws", ROW + "zp0"],
                [m + "y"],
                domain="com.microsoft",
            )
        )
        op("Mul", [p + "z_col", m + "colsum"], m + "correction")
        op("Sub", [m + "y", m + "correction"], m + "centred")
        op("Mul", [m + "centred", p + "scale_col"], m + "scaled")
        op("Concat", [p + "lead", m + "n"], m + "shape", axis=0)
        nodes.append(helper.make_node("Reshape", [m + "scaled", m + "shape"], list(node.output)))
    graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in added.items())
    _replace_nodes(model, nodes)
    onnx.save(model, str(target))


def _replace_nodes(model, nodes: list) -> None:
    from onnx import helper

    graph = model.graph
    used = {name for node in nodes for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    del graph.node[:]
    graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def build_all(work: Path, wordnet: Path, scifact: Path) -> dict[str, tuple[Path, int | None]]:
    """name -> (graph, fixed batch size or None)."""
    work.mkdir(parents=True, exist_ok=True)
    fp32 = Encoder().load().graph_path
    dynamic = Encoder(quantize="int8", int8_method="dynamic").load().graph_path
    per_row = Encoder(quantize="int8").load().graph_path
    calibration = read_texts(wordnet, 20000, 200) + read_texts(scifact, 4000, 20)
    builders = {
        "per-row asymmetric": lambda t: build_per_row_asymmetric(fp32, t),
        "static QDQ (MinMax)": lambda t: build_static(fp32, t, calibration, "QDQ"),
        "static QOperator (MinMax)": lambda t: build_static(fp32, t, calibration, "QOperator"),
        "MatMulNBits 8-bit, int8 compute, blocks of 32": lambda t: build_nbits(fp32, t, 4, 32),
        "MatMulNBits 8-bit, int8 compute, blocks of 128": lambda t: build_nbits(fp32, t, 4, 128),
        "MatMulNBits 8-bit weight-only (fp32 compute)": lambda t: build_nbits(fp32, t, 1, 32),
    }
    graphs = {
        "fp32": (fp32, None),
        "dynamic (before)": (dynamic, None),
        "dynamic, batches of 1": (dynamic, 1),
        "per-row (chosen)": (per_row, None),
    }
    for number, (name, build) in enumerate(builders.items()):
        target = work / f"candidate-{number}.onnx"
        build(target)
        graphs[name] = (target, None)
    return graphs


# ---- measuring -----------------------------------------------------------------------------------------


def determinism(graph: Path, fixed: int | None, glosses: list[str], abstracts: list[str]) -> dict:
    """Largest difference of any vector from its default-batched one: batch sizes 1, 2, 512, the texts in
    three interleaved parts, each of 40 glosses in a batch of 16 with long abstracts, every 12th text alone."""
    texts = glosses + abstracts
    reference = encoder_on(graph, fixed).encode(texts)
    out = {}
    for size in (1, 2, 512) if fixed is None else ():
        out[f"batch {size}"] = np.abs(encoder_on(graph, size).encode(texts) - reference).max()
    parts = [np.arange(i, len(texts), 3) for i in range(3)]
    thirds = [encoder_on(graph, fixed).encode([texts[i] for i in part]) for part in parts]
    out["three parts"] = max(np.abs(v - reference[part]).max() for v, part in zip(thirds, parts))
    mixed = encoder_on(graph, fixed or 16)
    beside = np.stack([mixed.encode([g, *abstracts[100:115]])[0] for g in glosses[:40]])
    out["beside long texts"] = np.abs(beside - reference[:40]).max()
    alone = encoder_on(graph, fixed)
    lone = np.stack([alone.encode([texts[i]])[0] for i in range(0, len(texts), 12)])
    out["alone"] = np.abs(lone - reference[::12]).max()
    return {name: float(value) for name, value in out.items()}


def fidelity(vectors: np.ndarray, exact: np.ndarray) -> dict:
    cosines = np.sum(vectors * exact, axis=1) / (
        np.linalg.norm(vectors, axis=1) * np.linalg.norm(exact, axis=1)
    )
    return {"mean_cosine": float(cosines.mean()), "min_cosine": float(cosines.min())}


def speeds(encoders: dict[str, Encoder], glosses, abstracts, queries, rounds: int) -> dict[str, dict]:
    """docs/s on glosses and on abstracts, and ms per query encoded alone: the encoders alternated within each
    round (the machine's other load then falls on all alike), medians."""
    found: dict[str, dict[str, list[float]]] = {name: {} for name in encoders}
    for encoder in encoders.values():
        encoder.encode(glosses[:64])  # load and warm
    for _ in range(rounds):
        for kind, texts in (("glosses_per_s", glosses), ("abstracts_per_s", abstracts)):
            for name, encoder in encoders.items():
                started = time.perf_counter()
                encoder.encode(texts)
                found[name].setdefault(kind, []).append(len(texts) / (time.perf_counter() - started))
        for name, encoder in encoders.items():
            started = time.perf_counter()
            for query in queries:
                encoder.encode([query])
            found[name].setdefault("query_ms", []).append(
                (time.perf_counter() - started) * 1000 / len(queries)
            )
    return {name: {k: statistics.median(v) for k, v in kinds.items()} for name, kinds in found.items()}


def measure_candidates(
    work: Path, wordnet: Path, scifact: Path, rounds: int = 5, glosses: int = 1000, abstracts: int = 200
) -> dict:
    graphs = build_all(work, wordnet, scifact)
    glosses, abstracts = read_texts(wordnet, 0, glosses), read_texts(scifact, 0, abstracts)
    exact = encoder_on(graphs["fp32"][0]).encode(glosses + abstracts)
    results = {}
    for name, (graph, fixed) in graphs.items():
        print(f"  {name}", flush=True)
        vectors = encoder_on(graph, fixed).encode(glosses + abstracts)
        differences = determinism(graph, fixed, glosses, abstracts)
        results[name] = {
            "max_difference": max(differences.values()),
            "differences": differences,
            **fidelity(vectors, exact),
        }
        release(str(graph))  # its sessions' memory (a batch of 512 abstracts takes GBs)
    encoders = {name: encoder_on(graph, fixed) for name, (graph, fixed) in graphs.items()}
    queries = [gloss[:60] for gloss in glosses[:50]]
    for name, speed in speeds(encoders, glosses[:600], abstracts[:40], queries, rounds).items():
        results[name].update(speed)
    return results
