"""The "speechbrain" attackers: VoicePrivacy's ASV_eval with a SpeechBrain folder.

`speechbrain`: the released model as it is (lazy-informed / ignorant: nothing to train). `speechbrain-train`:
the semi-informed attacker, the folder's network trained on the run's (anonymized) training speech by
VoicePrivacy's recipe (from scratch, or fine-tuned from the folder's weights), then used the same way.
Both: cosine scores; a trial side is the mean of its utterances' embeddings, as VoicePrivacy averages
a speaker's enrollment embeddings (SpeakerEmbeddings.convert_to_spk_level), without length normalisation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from vpeval.api import Attacker
from vpeval.errors import ConfigError
from vpeval.sides import remembered_side_means, require_utterances
from vpeval.types import TrainingData, Utterance
from vpeval.vector_table import VectorTable
from vpeval_speechbrain.params import SpeechBrainParams, SpeechBrainTrainParams


class SpeechBrainAttacker(Attacker):
    """A released SpeechBrain speaker-embedding folder (VoicePrivacy 2024 asv_orig), no training."""

    name: ClassVar[str] = "speechbrain"
    sample_rate: ClassVar[int] = 16000
    needs_training: ClassVar[bool] = False
    device_sensitive: ClassVar[bool] = True
    Params: ClassVar[type[SpeechBrainParams]] = SpeechBrainParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        from vpeval_speechbrain.service import FolderEmbeddings  # torch: on use, not on import

        self.folder = FolderEmbeddings(self.params, self.context, self.name)
        self._cache = VectorTable()  # (path, channel) -> embedding, in the folder's dtype
        self._sign_noted = False

    @classmethod
    def missing_paths(cls, params: SpeechBrainParams) -> list[str]:
        from vpeval_speechbrain.paths import WAVLM_FILE, missing, model_folder

        out = missing(f"attacker {cls.name}:", params.source, params.ssl_model)
        folder = model_folder(params.source)
        asv_ssl = params.ssl_model is not None or (folder / WAVLM_FILE).is_file()
        if params.embedding_normalization == "toolkit-sign" and folder.is_dir() and not asv_ssl:
            out.append(
                f"attacker {cls.name}: embedding_normalization toolkit-sign is VPC 2026's asv_ssl quirk, but {folder} "
                "is not an asv_ssl folder (no WavLM-Large.pt, no ssl_model); set embedding_normalization: l2."
            )
        return out

    def train(self, data: TrainingData) -> None:
        """Nothing to learn: the folder's model is used as released."""

    def save(self, folder: Path) -> None:
        """Nothing to store: the model stays in its folder (its files' contents key the embeddings)."""

    def load(self, folder: Path) -> None:
        """Nothing to restore."""

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return self.represent_many([utterances])[0]

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        """Mean embedding per side [S, D]; each distinct utterance is embedded once per attacker."""
        require_utterances(sides, self.name)
        return remembered_side_means(sides, self._cache, self._embeddings, np.float64)

    def _embeddings(self, utterances: Sequence[Utterance]) -> list[np.ndarray]:
        """The folder's embeddings; with embedding_normalization toolkit-sign, VPC 2026's +-1 vectors (asv_ssl)."""
        vectors = self.folder.embed_utterances(utterances, f"{self.name}: embed")
        if self.params.embedding_normalization == "l2":
            return vectors
        from vpeval_speechbrain.ssl import TOOLKIT_SIGN_NOTE, toolkit_sign

        if self.folder._ssl is None:
            raise ConfigError(
                f"{self.name}: embedding_normalization toolkit-sign is VPC 2026's asv_ssl quirk, but "
                f"{self.params.source} is not an asv_ssl folder; set embedding_normalization: l2."
            )
        if not self._sign_noted:  # once per attacker: a Logged line of report.md's drops and doubts
            self.context.log.warning("%s: %s.", self.name, TOOLKIT_SIGN_NOTE)
            self._sign_noted = True
        return list(toolkit_sign(np.stack(vectors))) if len(vectors) else vectors


class SpeechBrainTrainAttacker(SpeechBrainAttacker):
    """The folder's network trained by VoicePrivacy's semi-informed recipe, saved as a SpeechBrain folder."""

    name: ClassVar[str] = "speechbrain-train"
    needs_training: ClassVar[bool] = True
    Params: ClassVar[type[SpeechBrainTrainParams]] = SpeechBrainTrainParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._trained: Path | None = None

    def train(self, data: TrainingData) -> None:
        from vpeval_speechbrain.paths import model_folder
        from vpeval_speechbrain.ssl import is_ssl_folder

        out = self.context.folder("trained")
        source = model_folder(self.params.source)
        if self.params.ssl_model is not None or is_ssl_folder(source):
            from vpeval_speechbrain.ssl_training import finetune_ssl

            if self.params.recipe_value("start") != "source":
                raise ConfigError(
                    f"{self.name}: VPC 2026's asv_ssl network is fine-tuned from its folder, not trained from scratch; "
                    "set recipe: vpc2026-track1 (or start: source)."
                )
            self.context.apply_threads()
            self._trained = finetune_ssl(self.folder._use_ssl(source), self.params, self.context, data, out, self.name)
        else:
            from vpeval_speechbrain.training import train_folder

            self._trained = train_folder(self.params, self.context, data, out, self.name)
        self._use(self._trained)

    def save(self, folder: Path) -> None:
        from vpeval_speechbrain.training import copy_model_folder

        if self._trained is None:
            raise RuntimeError(f"attacker {self.name} has no trained model: call train() or load() first")
        copy_model_folder(self._trained, Path(folder))

    def load(self, folder: Path) -> None:
        self._trained = Path(folder)
        self._use(self._trained)

    def training_curve(self) -> list[dict]:
        """The trainer's epochs (loss, validation EER; the kept one marked), stored beside the trained folder."""
        from vpeval_speechbrain.training import HISTORY

        path = self._trained / HISTORY if self._trained is not None else None
        if path is None or not path.is_file():
            return []
        history = json.loads(path.read_text())
        if isinstance(history, list):  # asv_ssl fine-tuning (ssl_training.py): its epochs, the last one kept
            return [{**epoch, "selected": i == len(history) - 1} for i, epoch in enumerate(history)]
        best = history.get("best_epoch")
        return [{**epoch, "selected": epoch.get("epoch") == best} for epoch in history.get("epochs", [])]

    def _use(self, folder: Path) -> None:
        self.folder.use_folder(folder)
        self._cache.clear()
