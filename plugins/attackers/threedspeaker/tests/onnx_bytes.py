"""A small ONNX model written as protobuf bytes by hand, so the plugin's onnxruntime path is tested where the
`onnx` package (which torch.onnx.export needs) is absent: embs = ReduceMean(feats over frames) @ W.

Field numbers from onnx/onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
ValueInfoProto, TypeProto); wire format: varint keys (field << 3 | type), length-delimited messages.
"""

from __future__ import annotations

import numpy as np


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _tensor_type(dims: list[int | str]) -> bytes:
    """TypeProto{tensor_type{elem_type FLOAT, shape{dim: dim_value | dim_param}}}."""
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    return _bytes(1, _int(1, 1) + _bytes(2, shape))


def _value_info(name: str, dims: list[int | str]) -> bytes:
    return _bytes(1, name) + _bytes(2, _tensor_type(dims))


def _node(op: str, inputs: list[str], outputs: list[str], attributes: bytes = b"") -> bytes:
    body = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    return body + _bytes(4, op) + attributes


def mean_projection_model(weight: np.ndarray, input_name: str, output_name: str) -> bytes:
    """ONNX (opset 13) bytes of embs[B, E] = mean over T of feats[B, T, F], times weight[F, E]."""
    weight = np.ascontiguousarray(weight, dtype=np.float32)
    feat_dim, embedding = weight.shape
    axes = _bytes(1, "axes") + _int(8, 1) + _int(20, 7)  # AttributeProto{name, ints: [1], type: INTS}
    keepdims = _bytes(1, "keepdims") + _int(3, 0) + _int(20, 2)  # {name, i: 0, type: INT}
    reduce = _node("ReduceMean", [input_name], ["pooled"], _bytes(5, axes) + _bytes(5, keepdims))
    project = _node("MatMul", ["pooled", "W"], [output_name])
    initializer = _int(1, feat_dim) + _int(1, embedding) + _int(2, 1) + _bytes(8, "W") + _bytes(9, weight.tobytes())
    graph = (
        _bytes(1, reduce)
        + _bytes(1, project)
        + _bytes(2, "mean_projection")
        + _bytes(5, initializer)
        + _bytes(11, _value_info(input_name, ["B", "T", feat_dim]))
        + _bytes(12, _value_info(output_name, ["B", embedding]))
    )
    opset = _bytes(1, "") + _int(2, 13)
    return _int(1, 8) + _bytes(2, "vpeval-test") + _bytes(7, graph) + _bytes(8, opset)
