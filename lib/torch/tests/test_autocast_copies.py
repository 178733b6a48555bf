"""vpeval_torch.autocast_copies: under CPU bf16 autocast a wav2vec2's linear layers (and time_major_cnn's
convolutions) use weights cast once, with outputs bit for bit those of autocast's own per-call casts; fp32 runs
are the module's own forward, untouched."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from vpeval_torch.autocast_copies import cast_copy, weights_under_autocast
from vpeval_torch.ssl_masked import time_major_under_autocast

transformers = pytest.importorskip("transformers")


@pytest.fixture
def model(tiny_wav2vec2):
    def build(norm: str):
        net = tiny_wav2vec2(norm)  # biases off zero, so a bias cast wrongly would show
        time_major_under_autocast(net)  # as the ASR / SER loaders install it
        return net

    return build


class BF16Casts(TorchDispatchMode):
    """Records casts to bf16 (aten._to_copy), autocast's included, by the cast tensor's data pointer."""

    def __init__(self):
        super().__init__()
        self.sources: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten._to_copy.default and kwargs.get("dtype") == torch.bfloat16:
            self.sources.append(args[0].data_ptr())
        return func(*args, **kwargs)


def forward(net, waves, precision):
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        return net(waves).last_hidden_state


@pytest.mark.parametrize("norm", ["group", "layer"])
def test_bf16_outputs_bit_identical_and_fp32_untouched(norm, model):
    plain = model(norm)
    cast_once = copy.deepcopy(plain)
    weights_under_autocast(cast_once)
    waves = torch.randn(2, 12000, generator=torch.Generator().manual_seed(1))
    for precision in ("fp32", "bf16", "bf16", "fp32"):  # copies made, reused, and fp32 after them
        expected, got = forward(plain, waves, precision), forward(cast_once, waves, precision)
        assert got.dtype == (torch.bfloat16 if precision == "bf16" else torch.float32)
        assert torch.equal(got, expected)
    assert not hasattr(plain.encoder.layers[0].attention.q_proj, "_autocast_copies")  # the reference cast per call


def test_fp32_makes_no_copies(model):
    net = model("layer")
    weights_under_autocast(net)
    forward(net, torch.randn(1, 8000), "fp32")
    assert not any("_autocast_copies" in m.__dict__ for m in net.modules())


def test_weights_are_cast_once_per_model_not_per_region(model):
    plain = model("group")
    cast_once = copy.deepcopy(plain)
    weights_under_autocast(cast_once)
    linears = [m for m in cast_once.modules() if type(m) is torch.nn.Linear]
    waves = torch.randn(1, 8000)
    forward(cast_once, waves, "bf16")  # the first region makes the copies
    counts = {}
    for name, net in (("plain", plain), ("cast_once", cast_once)):
        convs = [layer.conv for layer in net.feature_extractor.conv_layers]  # time_major_cnn's products
        weights = {
            m.weight.data_ptr() for m in [*net.modules(), *convs] if type(m) in (torch.nn.Linear, torch.nn.Conv1d)
        }
        with BF16Casts() as casts:
            forward(net, waves, "bf16")
        counts[name] = sum(source in weights for source in casts.sources)
    assert counts["plain"] >= len(linears)  # autocast casts every linear weight again in a new region
    assert counts["cast_once"] == 0
    copies = [m.__dict__["_autocast_copies"][("weight", torch.bfloat16)][1] for m in linears]
    assert all(c.dtype == torch.bfloat16 for c in copies)
    assert all(torch.equal(c, m.weight.to(torch.bfloat16)) for c, m in zip(copies, linears))


def test_a_changed_weight_is_cast_again():
    linear = torch.nn.Linear(4, 3)
    weights_under_autocast(linear)
    x = torch.randn(2, 4)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        before = linear(x)
        linear.weight.mul_(2)  # in place: the version moves
        after = linear(x)
        linear.weight = torch.nn.Parameter(torch.randn(3, 4))  # replaced
        replaced = linear(x)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        reference = torch.nn.functional.linear(x, linear.weight, linear.bias)
    assert not torch.equal(before, after)
    assert torch.equal(replaced, reference)
    assert cast_copy(linear, "weight", torch.float32) is linear.weight  # no copy where the dtype already is


def test_a_weight_normed_convolution_is_computed_once_with_autocasts_numbers():
    """wav2vec2's positional convolution: its weight-normed weight computed and cast once, not on every call, with
    the outputs of autocast's own per-call computation; computed again when an original changes."""
    from torch.nn.utils.parametrizations import weight_norm

    torch.manual_seed(0)
    plain = weight_norm(torch.nn.Conv1d(16, 16, kernel_size=8, padding=4, groups=4), name="weight", dim=2)
    cast_once = copy.deepcopy(plain)
    weights_under_autocast(cast_once)
    computed = []
    norm = cast_once.parametrizations.weight[0]
    norm.register_forward_hook(lambda module, args, output: computed.append(1))
    x = torch.randn(1, 16, 50)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for _ in range(3):
            assert torch.equal(cast_once(x), plain(x))
        assert len(computed) == 1
        cast_once.parametrizations.weight.original1.mul_(2)  # in place: computed again
        plain.parametrizations.weight.original1.mul_(2)
        assert torch.equal(cast_once(x), plain(x)) and len(computed) == 2
    assert torch.equal(cast_once(x), plain(x)) and len(computed) == 3  # fp32: the module's own forward
