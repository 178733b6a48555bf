"""Weights cast to the CPU autocast's dtype once per loaded model instead of once per autocast region.

torch's autocast casts an fp32 weight to bf16 on every F.linear call and keeps the copy only until its region
ends, so a model run one utterance at a time (one region each) casts its whole transformer again for every
utterance. The copies here are made by the same cast (Tensor.to: round to nearest even), and autocast leaves a
tensor already in its dtype as it is, so every copy is bit for bit what autocast's own cast gives (the linear
layers' products then run on rows padded to a few shapes, shape_buckets, which may round a sum differently in
the last bit; the convolutions' are autocast's own). The fp32 parameters stay where they are (the same loaded
model serves fp32 runs), the copies are plain attributes (not in state_dict, not moved by .to()), remade when a
parameter is replaced or changed in place, and outside CPU autocast the module's own forward runs unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.utils import parametrize

from vpeval_torch.shape_buckets import bucketed_linear


def cast_copy(module: torch.nn.Module, name: str, dtype: torch.dtype) -> torch.Tensor | None:
    """`module`'s parameter `name` as `dtype`: the tensor itself where it already is, else a copy cast once and
    kept on the module until the parameter is replaced or changed in place (its data pointer or version). A
    parametrized one (weight norm: the weight computed from its originals on every read) is computed once too,
    until an original changes: the same deterministic computation, so the same values."""
    sources = sources_of(module, name)
    if not parametrize.is_parametrized(module, name) and (sources[0] is None or sources[0].dtype == dtype):
        return sources[0]
    copies = module.__dict__.setdefault("_autocast_copies", {})
    key = tuple((t.data_ptr(), t._version, t.device) for t in sources)
    found = copies.get((name, dtype))
    if found is None or found[0] != key:
        with torch.no_grad():  # a copy of the values, never part of a graph
            found = (key, getattr(module, name).detach().to(dtype))
        copies[(name, dtype)] = found  # threads racing here store equal copies
    return found[1]


def sources_of(module: torch.nn.Module, name: str) -> list:
    """The tensors `module`'s `name` is made of: a parametrization's originals (read without computing it), else
    the tensor itself (None where there is none)."""
    if parametrize.is_parametrized(module, name):
        return list(module.parametrizations[name].parameters())
    return [getattr(module, name)]


def weights_under_autocast(module: torch.nn.Module) -> None:
    """Every torch.nn.Linear and zero-padded torch.nn.Conv1d inside `module` runs, under CPU autocast, F.linear /
    F.conv1d on its weight and bias cast once (cast_copy) rather than autocast casting them on each call; its own
    forward otherwise. Both are in CPU autocast's lower-precision list (torch.testing._internal.autocast_test_lists:
    AutocastCPUTestLists.nn_16), so autocast casts every argument to its dtype there anyway: only the input's cast
    is left to it. A weight-normed convolution (wav2vec2's positional one: computing and casting its weight was
    about half of each call's time) is computed once as well. The linear layers' rows are padded to a few shapes
    (shape_buckets.bucketed_linear). Subclasses (e.g. MultiheadAttention's out_proj, whose weight the attention
    reads itself) are left alone. Idempotent."""
    for layer in module.modules():
        kind = parametrize.type_before_parametrizations(layer)  # a weight-normed Conv1d is a subclass made for it
        if kind not in (torch.nn.Linear, torch.nn.Conv1d) or getattr(layer, "autocast_copies", False):
            continue
        if kind is torch.nn.Conv1d and layer.padding_mode != "zeros":
            continue
        own = layer.forward

        def forward(input, own=own, layer=layer, kind=kind):
            bias = layer.bias
            if (
                input.device.type == "cpu"
                and torch.is_autocast_enabled("cpu")
                and all(t.device.type == "cpu" and t.dtype == torch.float32 for t in sources_of(layer, "weight"))
                and (bias is None or bias.dtype == torch.float32)
                and input.dtype != torch.float64  # autocast casts no float64 argument
            ):
                dtype = torch.get_autocast_dtype("cpu")
                weight, bias = cast_copy(layer, "weight", dtype), cast_copy(layer, "bias", dtype)
                if kind is torch.nn.Linear:
                    return bucketed_linear(input, weight, bias)
                return F.conv1d(input, weight, bias, layer.stride, layer.padding, layer.dilation, layer.groups)
            return own(input)

        layer.forward, layer.autocast_copies = forward, True
