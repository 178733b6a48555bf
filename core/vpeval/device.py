"""Where torch models run and in what precision: the experiment's `device` and `precision` keys.

The experiment names a device (`auto`, `cpu`, `cuda`, `cuda:N`), a GPU precision (`fp32`, `bf16`, `fp16`)
and a CPU one (`cpu_precision`: `fp32`, the default, or `bf16`, opt-in on a CPU with AVX512-BF16 or AMX).
The runner resolves them once (`auto` is CUDA when torch sees a GPU) and hands the result to every
plugin through `PluginContext.device` / `.precision` / `.autocast()`, whose `precision` is the one computed in.

Numbers: on the CPU in fp32 (the default) nothing about the device enters a cache key, so results
computed before these keys existed stay valid. On a GPU, or in bf16/fp16, the keys of the plugins that
declare `device_sensitive = True` (the torch ones) carry `numerics_identity(...)`: CUDA kernels and
reduced precision give numbers of their own, never mixed with CPU results in one cache entry (which GPU
is not in the key). The kernel pins set in the environment join every key but the corpus's (kernel_settings).

torch is imported only where a GPU question is asked; nothing here starts CUDA.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

DEVICE_PATTERN = r"^(auto|cpu|cuda|cuda:[0-9]{1,2})$"
PRECISIONS = ("fp32", "bf16", "fp16")
_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def available_cores() -> int:
    """The cores this process may run on (its affinity: taskset, a cgroup's cpuset), the runs' default `workers`."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_GPU_NODES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/kfd")  # NVIDIA's driver, AMD's ROCm


def cuda_device_count() -> int:
    """How many GPUs torch sees here (0 without torch, or without CUDA); does not initialise CUDA.

    A machine without a GPU driver answers without importing torch, so `vpeval validate` stays quick."""
    if not any(os.path.exists(node) for node in _GPU_NODES):
        return 0
    try:
        import torch
    except ImportError:
        return 0
    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # a broken driver counts as no GPU; the validate sentence says so
        return 0


def device_problem(spec: str) -> str | None:
    """Why `spec` cannot run on this machine (one sentence without the file prefix), or None."""
    if spec in ("auto", "cpu"):
        return None
    count = cuda_device_count()
    if count == 0:
        return (
            f"device '{spec}' needs a CUDA GPU and torch sees none on this machine; use `device: auto` "
            "(CUDA when present, else the CPU) or `device: cpu`."
        )
    match = re.fullmatch(r"cuda:(\d+)", spec)
    if match and int(match.group(1)) >= count:
        return f"device '{spec}' does not exist: torch sees {count} GPU(s), cuda:0 to cuda:{count - 1}."
    return None


def resolve_device(spec: str) -> str:
    """The device a run uses: `auto` is `cuda` when torch sees a GPU, else `cpu`; others as written."""
    if spec == "auto":
        return "cuda" if cuda_device_count() > 0 else "cpu"
    return spec


def device_type(device: str) -> str:
    """'cuda' for cuda and cuda:N, 'cpu' for cpu."""
    return device.split(":", 1)[0]


def effective_precision(device: str, precision: str, cpu_precision: str = "fp32") -> str:
    """The precision computed in: the experiment's `precision` on a GPU, its `cpu_precision` on the CPU."""
    return precision if device_type(device) == "cuda" else cpu_precision


def cpu_bf16_problem() -> str | None:
    """Why `cpu_precision: bf16` is refused: no AVX512-BF16 / AMX-BF16 (x86) or BF16 (Arm) flag in /proc/cpuinfo."""
    cpuinfo = Path("/proc/cpuinfo")  # Linux; elsewhere no flags, so refused
    flags = set(re.findall(r"\w+", cpuinfo.read_text(errors="replace"))) if cpuinfo.exists() else set()
    if flags & {"avx512_bf16", "amx_bf16", "bf16"}:
        return None
    return "cpu_precision 'bf16' needs a CPU with bf16 instructions (AVX512-BF16, AMX); this one has none: use fp32."


KERNEL_ENV = "ATEN_CPU_CAPABILITY ONEDNN_MAX_CPU_ISA MKL_CBWR OPENBLAS_CORETYPE CT2_USE_MKL CT2_FORCE_CPU_ISA".split()


def kernel_settings() -> dict[str, str]:
    """The math libraries' kernel pins set here (scripts/portable-kernels.sh); unset, each library picks by CPU."""
    return {name: os.environ[name] for name in KERNEL_ENV if os.environ.get(name)}


def machine() -> dict[str, Any]:
    """What results.json records of where a run computed: the CPU's model name and each kernel pin (None: unset)."""
    cpuinfo = Path("/proc/cpuinfo")  # Linux; elsewhere (or on an Arm without a model name) the architecture
    found = cpuinfo.exists() and re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(errors="replace"), re.M)
    kernels = dict.fromkeys(KERNEL_ENV) | kernel_settings()
    return {"cpu": found.group(1).strip() if found else os.uname().machine, "kernels": kernels}


def numerics_identity(device: str, precision: str) -> dict[str, str]:
    """What a device-sensitive plugin's cache key adds: the precision computed in off the CPU's fp32, kernel pins."""
    if device_type(device) == "cpu" and precision == "fp32":
        return kernel_settings()
    return {"device": device_type(device), "precision": precision, **kernel_settings()}


def autocast(device: str, precision: str) -> AbstractContextManager[Any]:
    """torch.autocast for the precision computed in (bf16 / fp16; bf16 on the CPU); a no-op context for fp32."""
    if precision == "fp32":
        return nullcontext()
    import torch

    return torch.autocast(device_type=device_type(device), dtype=getattr(torch, _DTYPES[precision]))


def cuda_started() -> bool:
    """Whether this process has initialised CUDA: from then on a forked child would crash in CUDA."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def cpu_state_dict(state: Any) -> Any:
    """A state dict (or a module's) with every tensor on the CPU and detached, so a checkpoint saved on a
    GPU loads on any device (and carries no device of the run that wrote it)."""
    if hasattr(state, "state_dict"):
        state = state.state_dict()
    if isinstance(state, dict):
        return {key: cpu_state_dict(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(cpu_state_dict(value) for value in state)
    if hasattr(state, "detach") and hasattr(state, "cpu"):
        return state.detach().cpu()
    return state
