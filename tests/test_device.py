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


def test_the_cpu_computes_in_its_cpu_precision_whatever_the_gpu_precision():
    assert devices.effective_precision("cpu", "bf16") == "fp32"
    assert devices.effective_precision("cpu", "bf16", "fp32") == "fp32"
    assert devices.effective_precision("cpu", "fp32", "bf16") == "bf16"
    assert devices.effective_precision("cuda:1", "bf16", "fp32") == "bf16"
    assert devices.numerics_identity("cpu", "fp32") == {}
    assert devices.numerics_identity("cpu", "bf16") == {"device": "cpu", "precision": "bf16"}
    assert devices.numerics_identity("cuda:1", "fp16") == {"device": "cuda", "precision": "fp16"}


def _cpuinfo(monkeypatch, tmp_path, flags: str) -> None:
    """This machine's /proc/cpuinfo replaced by one whose flags line is `flags`."""
    (tmp_path / "cpuinfo").write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    monkeypatch.setattr(devices, "Path", lambda _: tmp_path / "cpuinfo")


def test_cpu_bf16_is_refused_in_one_sentence_naming_the_field_on_a_cpu_without_bf16(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "cuda_device_count", lambda: 0)
    _cpuinfo(monkeypatch, tmp_path, "fpu sse2 avx2 avx512f avx512bw avx512_vnni")
    path = write(tmp_path, "cpu_precision: bf16\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    message = str(err.value)
    assert f"{path}, line 9 (cpu_precision)" in message and "bf16 instructions" in message and "use fp32" in message
    assert message.count("\n") == 0
    assert load_experiment(write(tmp_path, "cpu_precision: fp32\n")).experiment.cpu_precision == "fp32"
    path = write(tmp_path, "cpu_precision: bf16\n")
    for flags in ("fpu avx512f avx512_bf16", "fpu amx_tile amx_bf16", "fp asimd bf16 i8mm"):  # x86 and Arm spell it
        _cpuinfo(monkeypatch, tmp_path, flags)
        assert load_experiment(path).experiment.cpu_precision == "bf16"


def test_cpu_bf16_is_not_checked_where_the_run_is_on_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "cuda_device_count", lambda: 1)
    _cpuinfo(monkeypatch, tmp_path, "fpu avx2")
    exp = load_experiment(write(tmp_path, "cpu_precision: bf16\n"))
    assert exp.attackers[0].plugin.identity()["numerics"] == {"device": "cuda", "precision": "fp32"}


def test_cpu_bf16_keys_differ_from_fp32_ones_and_fp32_keys_are_unchanged(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "cuda_device_count", lambda: 0)
    monkeypatch.setattr(devices, "cpu_bf16_problem", lambda: None)
    monkeypatch.setattr("vpeval.config_checks.cpu_bf16_problem", lambda: None)
    default = load_experiment(write(tmp_path)).attackers[0].plugin.identity()
    fp32 = load_experiment(write(tmp_path, "cpu_precision: fp32\nprecision: bf16\n")).attackers[0].plugin.identity()
    bf16 = load_experiment(write(tmp_path, "cpu_precision: bf16\n"))
    assert fp32 == default and "numerics" not in default
    assert bf16.attackers[0].plugin.identity()["numerics"] == {"device": "cpu", "precision": "bf16"}
    assert bf16.attackers[0].plugin.identity() != default


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


def test_autocast_is_a_no_op_in_fp32_and_bf16_on_the_cpu_when_the_run_computes_in_it():
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    plain = layer(x)
    with PluginContext().autocast(), torch.no_grad():  # the default: fp32, the same bits as no context
        assert torch.equal(layer(x), plain)
    with devices.autocast("cpu", "fp32"):
        assert layer(x).dtype == torch.float32
    with PluginContext(device="cpu", precision="bf16").autocast():
        assert layer(x).dtype == torch.bfloat16


def test_the_runner_computes_in_fp32_on_the_cpu_unless_cpu_precision_says_bf16(tmp_path, monkeypatch):
    from vpeval.run.runner import Runner

    monkeypatch.setattr(devices, "cuda_device_count", lambda: 0)
    monkeypatch.setattr("vpeval.config_checks.cpu_bf16_problem", lambda: None)
    for extra, expected in (("", "fp32"), ("precision: bf16\n", "fp32"), ("cpu_precision: bf16\n", "bf16")):
        runner = Runner(load_experiment(write(tmp_path, "device: cpu\n" + extra)), output=tmp_path / "run")
        assert (runner.device, runner.precision) == ("cpu", expected)


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


@pytest.mark.slow  # two runs that train a small ECAPA: 27 s of CPU
def test_a_cpu_bf16_run_says_so_in_run_log_and_report_and_keeps_its_own_cache_entries(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import json

    from vpeval.run.runner import Runner

    monkeypatch.setattr(devices, "cuda_device_count", lambda: 0)
    monkeypatch.setattr("vpeval.config_checks.cpu_bf16_problem", lambda: None)  # bf16 autocast runs on any CPU
    results = {}
    for precision in ("fp32", "bf16"):
        exp = load_experiment(write(tmp_path, f"cpu_precision: {precision}\nworkers: 1\n"))
        folder = tmp_path / f"run-{precision}"
        Runner(exp, cache_root=tmp_path / "cache", output=folder).run()
        warned = "computed in bf16 on the CPU (cpu_precision: bf16)"
        for name in ("run.log", "report.md", "results.json"):
            assert (warned in (folder / name).read_text()) == (precision == "bf16"), name
        rows = json.loads((folder / "results.json").read_text())["rows"]
        results[precision] = [row["value"] for row in rows if row["metric"] == "eer"]
        executed = json.loads((folder / "timings.json").read_text())["computed"]
        assert any(stage.startswith("score") for stage in executed)  # bf16 computed anew, not fp32's entries
    assert len(results["bf16"]) == len(results["fp32"]) > 0
