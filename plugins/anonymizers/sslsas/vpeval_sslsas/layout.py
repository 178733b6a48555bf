"""The released SSL-SAS model folder (pretrained_models_anon_xv, zenodo record 6529898 plus
hubert_base_ls960.pt, as scripts/engl_scripts/01_demo.sh lays it out), read as data.

    MODEL/HiFi-GAN/<model_type>/config.json       hyper-parameters (JSON)
    MODEL/HiFi-GAN/<model_type>/g_<8 digits>       {"generator": state dict} (the last by name is used)
    MODEL/HuBERT_soft/soft_model.pt                SoftPredictor state dict (ssl_model.*, W)
    MODEL/ECAPA-TDNN/embedding_model.ckpt          speechbrain ECAPA_TDNN state dict (channels 512 / 1536)
    MODEL/hubert_base_ls960.pt                     fairseq pickle: never read (its weights are in the two above)

Every checkpoint is read with torch.load(weights_only=True) (vpeval.torchload): a file that needs a
Python object unpickled is refused in one sentence, never run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpeval.errors import MissingModelError

DEFAULT_MODEL_TYPE = "libri_tts_clean_100_fbank_xv_ssl_freeze"
CONFIG = "config.json"
SOFT_MODEL = Path("HuBERT_soft") / "soft_model.pt"
ECAPA = Path("ECAPA-TDNN") / "embedding_model.ckpt"
GENERATOR_PREFIX = "g_"
# Parts of the release's latentGenerator state dict that are not the HiFi-GAN.
CONTENT_PREFIX = "latent_encoder."
SPEAKER_PREFIX = "xv_model."
FEATURE_PREFIXES = ("fbank.", "mean_var_norm.")  # speechbrain feature modules: no weights, ignored if present
MAX_CONFIG_BYTES = 1_000_000
EXPORT_HINT = (
    'where you trust the file, re-save its tensors with: python -c "import torch; '
    "c = torch.load('FILE', map_location='cpu', weights_only=False); "
    "torch.save({'generator': c['generator']} if 'generator' in c else c, 'FILE')\""
)


def hifigan_folder(model: str | Path, model_type: str) -> Path:
    return Path(model).expanduser() / "HiFi-GAN" / model_type


def generator_checkpoint(model: str | Path, model_type: str, checkpoint: str | None) -> Path | None:
    """The g_ file to read: `checkpoint` by name, else the last g_* by name (the release's scan_checkpoint)."""
    folder = hifigan_folder(model, model_type)
    if checkpoint is not None:
        path = folder / checkpoint
        return path if path.is_file() else None
    found = sorted(p for p in folder.glob(GENERATOR_PREFIX + "*") if p.is_file()) if folder.is_dir() else []
    return found[-1] if found else None


def missing_paths(model: str | Path, model_type: str, checkpoint: str | None, need_ecapa: bool) -> list[str]:
    """One sentence per file of the release layout that this machine lacks."""
    root = Path(model).expanduser()
    if not root.is_dir():
        return [
            f"the SSL-SAS model folder {root} does not exist: unpack the release's pretrained_models_anon_xv "
            "there (HiFi-GAN/, HuBERT_soft/, ECAPA-TDNN/)."
        ]
    problems = []
    folder = hifigan_folder(root, model_type)
    if not (folder / CONFIG).is_file():
        problems.append(
            f"the SSL-SAS generator config {folder / CONFIG} is missing: copy the release's HiFi-GAN folder."
        )
    if generator_checkpoint(root, model_type, checkpoint) is None:
        wanted = folder / checkpoint if checkpoint else folder / (GENERATOR_PREFIX + "*")
        problems.append(f"the SSL-SAS generator checkpoint {wanted} is missing: copy the release's g_ file there.")
    if not (root / SOFT_MODEL).is_file():
        problems.append(
            f"the SSL-SAS soft content encoder {root / SOFT_MODEL} is missing: copy the release's HuBERT_soft."
        )
    if need_ecapa and not (root / ECAPA).is_file():
        problems.append(f"the SSL-SAS speaker encoder {root / ECAPA} is missing: copy the release's ECAPA-TDNN folder.")
    return problems


def require(model: str | Path, model_type: str, checkpoint: str | None, need_ecapa: bool) -> None:
    problems = missing_paths(model, model_type, checkpoint, need_ecapa)
    if problems:
        raise MissingModelError(problems[0])


def read_config(path: Path) -> dict[str, Any]:
    """config.json as plain data (JSON only: nothing in it is ever imported or called)."""
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise MissingModelError(f"{path} is over {MAX_CONFIG_BYTES} bytes: not the release's config.json.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MissingModelError(f"{path} is not JSON ({exc}); give the release's config.json.") from None
    if not isinstance(data, dict):
        raise MissingModelError(f"{path} is not a JSON object; give the release's config.json.")
    return data


def check_variant(config: dict[str, Any], path: Path) -> None:
    """The released model is the soft-HuBERT + F0 + x-vector variant at 16 kHz; refuse the others."""
    wanted = {"latent": True, "f0": True, "xv": True}
    off = [k for k, v in wanted.items() if config.get(k) is not v]
    if off or not config.get("soft_model_path") or config.get("km_model_path"):
        raise MissingModelError(
            f"{path} describes another SSL-SAS variant (latent, f0 and xv must be true and soft_model_path set: "
            "the soft-HuBERT model); only that one is supported."
        )
    if int(config.get("sampling_rate", 0)) != 16000:
        raise MissingModelError(f"{path}: sampling_rate is {config.get('sampling_rate')}, not 16000.")


@dataclass
class GeneratorFile:
    """A g_ checkpoint's state dict split into the HiFi-GAN, the soft content encoder and the ECAPA."""

    path: Path
    generator: dict[str, Any]
    content: dict[str, Any]  # latent_encoder.* with the prefix kept ({} when absent)
    speaker: dict[str, Any]  # xv_model.* with the prefix dropped ({} when absent)


def read_generator_file(path: Path) -> GeneratorFile:
    from vpeval.torchload import load_weights_only

    try:
        data = load_weights_only(path)
    except MissingModelError as exc:
        raise MissingModelError(f"{str(exc).rstrip('.')}; {EXPORT_HINT.replace('FILE', str(path))}.") from None
    state = data.get("generator") if isinstance(data, dict) and "generator" in data else data
    if not isinstance(state, dict) or not state or not all(isinstance(k, str) for k in state):
        raise MissingModelError(
            f"{path} is not a HiFi-GAN checkpoint ({{'generator': state dict}}, as the release's train.py saves it)."
        )
    generator, content, speaker = {}, {}, {}
    for key, value in state.items():
        if key.startswith(CONTENT_PREFIX):
            content[key] = value
        elif key.startswith(SPEAKER_PREFIX):
            speaker[key[len(SPEAKER_PREFIX) :]] = value
        elif key.startswith(FEATURE_PREFIXES):
            continue
        else:
            generator[key] = value
    return GeneratorFile(path, generator, content, speaker)
