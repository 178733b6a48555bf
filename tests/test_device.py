"""The experiment's `device` and `precision` (vpeval.device): resolution, validation, cache keys, the
fork guard once CUDA has started, and checkpoints that load on another map_location."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vpeval import device as devices
from vpeval import executor as executor_module
from vpeval.api import PluginContext
from vpeval.config import load_experiment
from vpeval.errors import ConfigError
from vpeval.executor import LocalExecutor

EXPERIMENT = """\
name: devices
seed: 1
data:
  corpus: {{use: synth, params: {{speakers: 4, utterances: 4}}}}
attackers:
  - use: ecapa
protocols: [O-O]
metrics: [eer]
{extra}
"""


def write(tmp_path, extra: str = ""):
    path = tmp_path / "exp.yaml"
    path.write_text(EXPERIMENT.format(extra=textwrap.dedent(extra)))
    return path


def test_auto_is_the_cpu_on_a_machine_without_a_gpu(monkeypatch):
    monkeypatch.setattr(devices, "cuda_device_count", lambda: 0)
    assert devices.resolve_device("auto") == "cpu"
    assert devices.device_problem("auto") is None
    assert devices.device_problem("cpu") is None


def test_auto_is_cuda_where_torch_sees_a_gpu(monkeypatch):
    monkeypatch.setattr(devices, "cuda_device_count", lambda: 2)
    assert devices.resolve_device("auto") == "cuda"
    assert devices.device_problem("cuda:1") is None
    assert "cuda:0 to cuda:1" in devices.device_problem("cuda:2")


@pytest.mark.parametrize("spec", ["cuda", "cuda:0"])
def test_cuda_on_a_machine_without_one_is_refused_at_validate_with_one_sentence(tmp_path, monkeypatch, spec):
    monkeypatch.setattr(devices, "cuda_device_count", lambda: 0)
    path = write(tmp_path, f"device: {spec}\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    message = str(err.value)
    assert f"{path}, line 9 (device)" in message and "needs a CUDA GPU" in message and "device: auto" in message
    assert message.count("\n") == 0


def test_a_device_that_is_no_device_is_a_schema_error(tmp_path):
    with pytest.raises(ConfigError, match="device"):
        load_experiment(write(tmp_path, "device: gpu\n"))
    with pytest.raises(ConfigError, match="precision"):
        load_experiment(write(tmp_path, "precision: fp8\n"))


def test_the_cpu_computes_in_fp32_whatever_the_precision():
    assert devices.effective_precision("cpu", "bf16") == "fp32"
    assert devices.effective_precision("cuda:1", "bf16") == "bf16"
    assert devices.numerics_identity("cpu", "bf16") == {}
    assert devices.numerics_identity("cuda:1", "fp16") == {"device": "cuda", "precision": "fp16"}


def test_cpu_keys_are_unchanged_and_gpu_keys_differ_for_torch_plugins_only(tmp_path, monkeypatch):
    cpu = load_experiment(write(tmp_path, "device: cpu\nprecision: bf16\n"))
    default = load_experiment(write(tmp_path))
    assert cpu.attackers[0].plugin.identity() == default.attackers[0].plugin.identity()
    assert "numerics" not in cpu.attackers[0].plugin.identity()
    monkeypatch.setattr(devices, "cuda_device_count", lambda: 1)
    gpu = load_experiment(write(tmp_path, "device: cuda\nprecision: bf16\n"))
    assert gpu.attackers[0].plugin.identity()["numerics"] == {"device": "cuda", "precision": "bf16"}
    # the eer metric computes with numpy: its key does not depend on the device
    assert gpu.metrics[0].identity() == cpu.metrics[0].identity()


def test_autocast_is_a_no_op_on_the_cpu_and_in_fp32():
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    with PluginContext(device="cpu", precision="bf16").autocast():
        assert layer(x).dtype == torch.float32
    with devices.autocast("cpu", "fp32"):
        assert layer(x).dtype == torch.float32


def test_autocast_uses_the_precision_on_a_gpu_device_type(monkeypatch):
    torch = pytest.importorskip("torch")
    seen = {}

    def fake_autocast(device_type, dtype):
        seen.update(device_type=device_type, dtype=dtype)
        return real("cpu", enabled=False)

    real = torch.autocast
    monkeypatch.setattr(torch, "autocast", fake_autocast)
    with devices.autocast("cuda:1", "bf16"):
        pass
    assert seen == {"device_type": "cuda", "dtype": torch.bfloat16}


def test_the_context_carries_device_and_precision_to_children_and_copies():
    import copy
    import pickle

    context = PluginContext(device="cuda:1", precision="bf16")
    assert context.on_gpu
    for other in (context.child("x"), copy.copy(context), pickle.loads(pickle.dumps(context))):
        assert (other.device, other.precision) == ("cuda:1", "bf16")
    assert not PluginContext().on_gpu


def _pid(item):
    return os.getpid(), item


def test_workers_fork_while_cuda_has_not_started(monkeypatch):
    monkeypatch.setattr(devices, "cuda_started", lambda: False)
    assert executor_module.start_method(_pid) == "fork"


def test_workers_are_spawned_once_cuda_has_started(monkeypatch):
    """A faked initialised CUDA: the pool spawns (fresh interpreters), never forks."""
    monkeypatch.setattr(devices, "cuda_started", lambda: True)
    assert executor_module.start_method(_pid) == "spawn"
    used = []
    real = executor_module.multiprocessing.get_context
    monkeypatch.setattr(
        executor_module.multiprocessing, "get_context", lambda method: used.append(method) or real(method)
    )
    results = sorted(LocalExecutor(2).map(_pid, [1, 2, 3]), key=lambda result: result[1])  # (pid, item): by item
    assert used == ["spawn"] and [item for _, item in results] == [1, 2, 3]
    assert all(pid != os.getpid() for pid, _ in results)


def test_a_func_that_does_not_pickle_runs_in_process_once_cuda_has_started(monkeypatch):
    monkeypatch.setattr(devices, "cuda_started", lambda: True)
    func = lambda item: (os.getpid(), item)  # noqa: E731 - a lambda does not pickle
    assert executor_module.start_method(func) is None
    assert sorted(LocalExecutor(2).map(func, [1, 2])) == [(os.getpid(), 1), (os.getpid(), 2)]


def test_checkpoints_are_saved_device_independent_and_load_on_another_map_location(tmp_path):
    torch = pytest.importorskip("torch")
    from vpeval.torchload import load_weights_only

    module = torch.nn.Linear(3, 2)
    state = devices.cpu_state_dict(module)
    assert all(t.device.type == "cpu" and not t.requires_grad for t in state.values())
    torch.save(state, tmp_path / "model.pt")
    meta = load_weights_only(tmp_path / "model.pt", map_location="meta")
    assert all(t.device.type == "meta" for t in meta.values())
    back = load_weights_only(tmp_path / "model.pt")
    assert np.array_equal(back["weight"].numpy(), module.weight.detach().numpy())


def test_a_checkpoint_holding_a_python_object_is_one_sentence_naming_it(tmp_path):
    torch = pytest.importorskip("torch")
    from vpeval.errors import MissingModelError
    from vpeval.torchload import load_weights_only

    torch.save({"config": Path(tmp_path)}, tmp_path / "model.pt")  # a pathlib object: not a tensor
    with pytest.raises(MissingModelError) as err:
        load_weights_only(tmp_path / "model.pt")
    message = str(err.value)
    assert "holds a Python object (pathlib" in message and "\n" not in message and "PyTorch 2.6" not in message
