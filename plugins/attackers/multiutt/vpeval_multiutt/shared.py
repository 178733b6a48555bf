"""Encoders trained once and shared by every multiutt system that asks for the same one.

The paper's two-stage systems start from "the best audio-only model" and one LUAR (IV-C): the fusion,
hybrid, RJCA and SSL-Whisper systems freeze encoders that the audio-only and text-only systems also
train. Here an encoder trained from scratch is stored under a digest of everything that decides its
weights (network sizes, training recipe, seed, the training utterances' audio content or transcripts,
and the code), next to the other multiutt models, so a second system with the same encoder loads it
instead of training it again, and gets exactly the weights that training would have given.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

from vpeval.content_cache import identity_digest, source_digest
from vpeval.device import cpu_state_dict
from vpeval.torchload import load_weights_only
from vpeval_multiutt.training import EpochRecord, History

WEIGHTS = "weights.pt"
EPOCHS = "epochs.json"


def code_digest() -> str:
    """The modules whose code decides a trained encoder's weights."""
    from vpeval_multiutt import audio_model, frames, text_model, training

    return source_digest(audio_model, frames, text_model, training)


class SharedEncoders:
    """Trained encoder weights under `folder/<kind>-<digest>/`, written atomically."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def load_or_train(
        self,
        kind: str,
        identity: object,
        module: nn.Module,
        state: Callable[[], dict],
        train: Callable[[], None],
        history: History,
    ) -> bool:
        """Fill `module` from the stored entry for (kind, identity), or train it and store it.

        `state()` gives what to store (the module's trainable state); the epochs that training appends
        to `history` are stored with it and appended again on reuse. Returns True when reused.
        """
        entry = self.folder / f"{kind}-{identity_digest(kind, identity, code_digest())}"
        if (entry / WEIGHTS).is_file() and (entry / EPOCHS).is_file():
            saved = load_weights_only(entry / WEIGHTS, map_location="cpu")
            missing, unexpected = module.load_state_dict(saved, strict=False)
            expected = set(state())
            if not unexpected and not expected.intersection(missing):
                history.epochs.extend(EpochRecord(**r) for r in json.loads((entry / EPOCHS).read_text()))
                module.eval()
                return True
        first = len(history.epochs)
        train()
        partial = entry.with_name(f"{entry.name}.{os.getpid()}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        torch.save(cpu_state_dict(state()), partial / WEIGHTS)
        (partial / EPOCHS).write_text(json.dumps([asdict(r) for r in history.epochs[first:]], indent=2))
        shutil.rmtree(entry, ignore_errors=True)
        partial.replace(entry)
        return False
