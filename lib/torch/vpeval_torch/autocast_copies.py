"""Weights cast to the CPU autocast's dtype once per loaded model instead of once per autocast region.

torch's autocast casts an fp32 weight to bf16 on every F.linear call and keeps the copy only until its region
ends, so a model run one utterance at a time (one region each) casts its whole transformer again for every
utterance. The copies here are made by the same cast (Tensor.to: round to nearest even), and autocast leaves a
tensor already in its dtype as it is, so every product and every number after it is bit for bit what autocast's
own cast gives. The fp32 parameters stay where they are (the same loaded model serves fp32 runs), the copies
are plain attributes (not in state_dict, not moved by .to()), remade when a parameter is replaced or changed in
place, and outside CPU autocast the module's own forward runs unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def cast_copy(module: torch.nn.Module, name: str, dtype: torch.dtype) -> torch.Tensor | None:
    """`module`'s parameter `name` as `dtype`: the tensor itself where it already is, else a copy cast once and
    kept on the module until the parameter is replaced or changed in place (its data pointer or version)."""
    tensor = getattr(module, name)
    if tensor is None or tensor.dtype == dtype:
        return tensor
    copies = module.__dict__.setdefault("_autocast_copies", {})
    key = (tensor.data_ptr(), tensor._version, tensor.device)
    found = copies.get((name, dtype))
    if found is None or found[0] != key:
        with torch.no_grad():  # a copy of the values, never part of a graph
            found = (key, tensor.detach().to(dtype))
        copies[(name, dtype)] = found  # threads racing here store equal copies
    return found[1]


def linear_weights_under_autocast(module: torch.nn.Module) -> None:
    """Every torch.nn.Linear inside `module` runs, under CPU autocast, F.linear on its weight and bias cast once
    (cast_copy) rather than autocast casting them on each call; its own forward otherwise. linear is in CPU
    autocast's lower-precision list (torch.testing._internal.autocast_test_lists: AutocastCPUTestLists.nn_16),
    so autocast casts every argument to its dtype there anyway: only the input's cast is left to it. Subclasses
    (e.g. MultiheadAttention's out_proj, whose weight the attention reads itself) are left alone. Idempotent."""
    for linear in module.modules():
        if type(linear) is not torch.nn.Linear or getattr(linear, "autocast_copies", False):
            continue
        own = linear.forward

        def forward(input, own=own, linear=linear):
            weight, bias = linear.weight, linear.bias
            if (
                input.device.type == weight.device.type == "cpu"
                and torch.is_autocast_enabled("cpu")
                and weight.dtype == torch.float32
                and (bias is None or bias.dtype == torch.float32)
                and input.dtype != torch.float64  # autocast casts no float64 argument
            ):
                dtype = torch.get_autocast_dtype("cpu")
                return F.linear(input, cast_copy(linear, "weight", dtype), cast_copy(linear, "bias", dtype))
            return own(input)

        linear.forward, linear.autocast_copies = forward, True
