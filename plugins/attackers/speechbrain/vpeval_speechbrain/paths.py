"""What `vpeval validate` checks before anything loads: the folders and files the parameters name exist.

Existence only (no torch; hyperparams.yaml is read only for its Pretrainer `paths:` entry, which says where
the weights are), one sentence per missing piece, so a typo in a VPC data root or model path is reported
with the others instead of ending the run at its first use.
"""

from __future__ import annotations

from pathlib import Path

from vpeval.errors import MissingModelError
from vpeval.safepath import PathProblem, stat_regular
from vpeval_sbfolder.checkpoints import latest_checkpoint
from vpeval_speechbrain.hparams import HyperParams
from vpeval_speechbrain.pretrainer import checkpoint_path, pretrainer_paths

HPARAMS = "hyperparams.yaml"
WEIGHTS = "embedding_model.ckpt"
WAVLM_FILE = "WavLM-Large.pt"


def model_folder(source: str) -> Path:
    """The folder the model is read from: `source`, or its latest `CKPT+<N>` sub-folder, the one the toolkit's
    run_evaluation.py picks (scan_checkpoint(model_dir, 'CKPT+') or model_dir), so exp/asv_orig is taken as
    the toolkit ships it."""
    folder = Path(source).expanduser()
    return latest_checkpoint(folder, "CKPT+") or folder


def missing(name: str, source: str, ssl_model: str | None) -> list[str]:
    folder = model_folder(source)
    if not folder.is_dir():
        return [
            f"{name} source {folder} is not a folder; give a SpeechBrain model folder (with {HPARAMS} and {WEIGHTS}), "
            "such as VoicePrivacy's exp/asv_orig or exp/asv_ssl (the toolkits' 01_download_data_model*.sh unpack "
            "them)."
        ]
    sentences = []
    ssl = ssl_model is not None or (folder / WAVLM_FILE).is_file()
    if ssl_model is not None and not Path(ssl_model).expanduser().exists():
        sentences.append(f"{name} ssl_model {ssl_model} does not exist; give WavLM-Large.pt or a transformers folder.")
    weights = folder / WEIGHTS
    if not ssl and (problem := _not_a_file(name, folder / HPARAMS)) is not None:
        sentences.append(problem or f"{name} source {folder} has no {HPARAMS}; give the SpeechBrain folder itself.")
    elif not ssl:
        weights = _named_weights(folder)
    if (problem := _not_a_file(name, weights)) is not None:
        sentences.append(problem or f"{name} source {folder} has no {WEIGHTS}; copy the whole model folder.")
    return sentences


def _named_weights(folder: Path) -> Path:
    """The embedding weights the loader reads: the file hyperparams.yaml's Pretrainer `paths:` entry names where
    it is found, else embedding_model.ckpt in the folder."""
    try:
        return checkpoint_path(folder, "embedding_model", pretrainer_paths(HyperParams.read(folder / HPARAMS)), False)
    except MissingModelError:  # an unreadable hyperparams.yaml: loading it names the fault
        return folder / WEIGHTS


def _not_a_file(name: str, path: Path) -> str | None:
    """None for a regular file; "" when nothing is there; else the sentence saying what is (a FIFO, a folder)."""
    try:
        stat_regular(path)
    except PathProblem as problem:
        return "" if not path.exists() and not path.is_symlink() else f"{name} {path} cannot be used: {problem.reason}."
    return None
