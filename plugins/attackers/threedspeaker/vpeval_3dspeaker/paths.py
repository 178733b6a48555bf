"""Which file of a model folder is the network: a torch checkpoint or an ONNX export (no torch, no reading).

`source` is a file, or a folder as published: ModelScope's 3D-Speaker folders hold one checkpoint
(campplus_voxceleb.bin, pretrained_eres2net.ckpt, ...) next to configuration.json and examples/;
WeSpeaker's hold avg_model.pt and config.yaml, with avg_model.onnx where it was exported; a 3D-Speaker
recipe's checkpoint folder holds embedding_model.ckpt next to classifier.ckpt. `vpeval validate` asks
`missing` (existence only); loading asks `model_file`, which raises the same sentence.
"""

from __future__ import annotations

from pathlib import Path

from vpeval.errors import MissingModelError
from vpeval.safepath import PathProblem, stat_regular

TORCH_SUFFIXES = (".bin", ".ckpt", ".pt", ".pth")
ONNX_SUFFIX = ".onnx"
RECIPE_CHECKPOINT = "embedding_model.ckpt"  # 3D-Speaker's training recipes (next to classifier.ckpt)


def candidates(folder: Path, fmt: str) -> tuple[list[Path], list[Path]]:
    """(torch checkpoints, ONNX files) directly in `folder` that `fmt` (auto, torch, onnx) accepts."""
    files = sorted(f for f in folder.iterdir() if f.is_file())
    torch_files = [f for f in files if f.suffix in TORCH_SUFFIXES] if fmt in ("auto", "torch") else []
    onnx_files = [f for f in files if f.suffix == ONNX_SUFFIX] if fmt in ("auto", "onnx") else []
    return torch_files, onnx_files


def _expected(fmt: str) -> str:
    if fmt == "onnx":
        return "an ONNX export (*.onnx)"
    if fmt == "torch":
        return "a torch checkpoint (*.bin, *.ckpt, *.pt or *.pth)"
    return "a torch checkpoint (*.bin, *.ckpt, *.pt or *.pth) or an ONNX export (*.onnx)"


def choose(source: str, fmt: str, name: str) -> tuple[Path, str] | str:
    """(the model file, "torch" or "onnx"), or the one sentence that says why there is none; `name` is the
    sentence's subject ("the campplus encoder's")."""
    path = Path(source).expanduser()
    if path.is_file():
        kind = "onnx" if path.suffix == ONNX_SUFFIX else "torch"
        if fmt not in ("auto", kind):
            return f"{name} source {path} is not {_expected(fmt)}; give one, or set format: auto."
        return path, kind
    if not path.is_dir():
        if path.exists():  # a FIFO, a device: there, but not a file to read
            return f"{name} source {path} cannot be used: {_problem(path)}."
        return f"{name} source {path} does not exist; give the model folder or file, {_expected(fmt)}."
    torch_files, onnx_files = candidates(path, fmt)
    if not torch_files and not onnx_files:  # a model file that is there but not a regular file is named so
        odd = [f for f in sorted(path.iterdir()) if f.suffix in (*TORCH_SUFFIXES, ONNX_SUFFIX) and not f.is_dir()]
        if odd:
            return f"{name} model file {odd[0]} cannot be used: {_problem(odd[0])}."
    if len(torch_files) > 1 and any(f.name == RECIPE_CHECKPOINT for f in torch_files):
        torch_files = [path / RECIPE_CHECKPOINT]
    for files, kind in ((torch_files, "torch"), (onnx_files, "onnx")):  # a checkpoint before an export
        if len(files) == 1:
            return files[0], kind
        if len(files) > 1:
            names = ", ".join(f.name for f in files)
            return f"{name} source folder {path} holds several model files ({names}); give the one to use as source."
    return f"{name} source folder {path} holds no model file; it needs {_expected(fmt)}."


def _problem(path: Path) -> str:
    try:
        stat_regular(path)
    except PathProblem as problem:
        return problem.reason
    return "it is not a regular file"


def model_file(source: str, fmt: str, name: str) -> tuple[Path, str]:
    found = choose(source, fmt, name)
    if isinstance(found, str):
        raise MissingModelError(found)
    return found


def missing(source: str, fmt: str, name: str) -> list[str]:
    found = choose(source, fmt, name)
    return [found] if isinstance(found, str) else []
