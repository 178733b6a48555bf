"""One trained G for spinv attackers that differ only in how they attack.

The core's training cache keys on every parameter, so two spinv attackers that differ only in
`compare` or `observed_seconds` (a duration sweep) would each train the same model. Neither
parameter reaches training (the Stage A checkpoint is chosen on local-view-length slices and G's
positions are sized from the view lengths), so the trained model is also stored under a key
without them, in a folder of the run cache that every spinv attacker shares, as the `ecapa`
encoder keeps the model it trains in its work folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from vpeval.content_cache import identity_digest
from vpeval.data.fingerprint import file_hash
from vpeval.types import Corpus

ATTACK_ONLY = ("compare", "observed_seconds", "trial_list", "max_pairs")  # parameters read only at attack time
SAVED = "recovery.pt"


def training_identity(attacker, corpus: Corpus, validation: Corpus | None, code: str) -> str:
    """Digest of everything a training depends on: the training parameters, the experiment seed, this
    package's training code (`code`: the attacker's `training_code()`), the frontend (code, parameters and
    fitted state), the target encoder's code, and the training and validation speech (ids, speakers and
    audio bytes)."""
    params = attacker.params.model_dump(mode="json")
    for name in ATTACK_ONLY:
        params.pop(name)
    frontend = attacker.attacked_frontend()
    encoder = attacker.encoder
    return identity_digest(
        json.dumps(params, sort_keys=True),
        attacker.context.seed,
        code,
        type(frontend).__qualname__,
        _code_of(frontend),
        json.dumps(frontend.params.model_dump(mode="json"), sort_keys=True),
        _state_digest(frontend),
        type(encoder).__qualname__,
        _code_of(encoder),
        _speech_digest(corpus),
        _speech_digest(validation) if validation is not None else "",
    )


def shared_folder(attacker, identity: str) -> Path | None:
    """Where the model of this training identity lives in the run cache; None outside a run."""
    root = attacker.context.options.get("cache_root")
    return Path(root) / "work" / "spinv-trained" / identity if root else None


def store(attacker, folder: Path) -> None:
    """Save the trained attacker into `folder` atomically (a killed run leaves no half model)."""
    partial = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(partial, ignore_errors=True)
    attacker.save(partial)
    try:
        os.replace(partial, folder)
    except OSError:  # another process stored the same model first
        if not (folder / SAVED).is_file():
            raise
        shutil.rmtree(partial, ignore_errors=True)


def _code_of(plugin) -> str:
    """Digest of the Python sources of the package that defines the plugin's class (a trained-here
    encoder depends on its package's training code too); its module name when it has no file."""
    module = sys.modules.get(type(plugin).__module__)
    if not getattr(module, "__file__", None):
        return type(plugin).__module__
    digest = hashlib.sha256()
    for path in sorted(Path(module.__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def target_extractor(attacker) -> str:
    """The content-cache identity of the target encoder's embeddings: its class, package code,
    parameters and the experiment seed (an encoder trained in vpeval, such as ecapa, is seeded by it)."""
    encoder = attacker.encoder
    spec = attacker.params.target_encoder.model_dump(mode="json")
    return "spinv-target-" + identity_digest(
        type(encoder).__qualname__, _code_of(encoder), json.dumps(spec, sort_keys=True), attacker.context.seed
    )


def _state_digest(frontend) -> str:
    """The frontend's fitted state (codebooks): what its save() writes."""
    digest = hashlib.sha256()
    with tempfile.TemporaryDirectory() as tmp:
        frontend.save(Path(tmp))
        for path in sorted(Path(tmp).rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(tmp)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _speech_digest(corpus: Corpus) -> str:
    return identity_digest(json.dumps([(u.id, u.speaker, u.channel, file_hash(u.path)) for u in corpus.utterances]))
