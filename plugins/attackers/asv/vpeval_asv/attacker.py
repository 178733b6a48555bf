"""The ecapa and xvector attackers: train a speaker-embedding network in vpeval, then score trials.

A trial side (a set of utterances) is the mean of its utterances' length-normalised embeddings,
the VoicePrivacy enrollment convention and the multi-utterance baseline of seed 000. Scores are
cosine (or PLDA), optionally AS-normalised against the training speakers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import ClassVar

import numpy as np

from vpeval.api import Attacker
from vpeval.errors import DataError
from vpeval.sides import require_utterances, side_means_by
from vpeval.types import TrainingData, Utterance
from vpeval_asv.params import AsvParams, EcapaParams, XvectorParams


class AsvAttacker(Attacker):
    """Base of the trained speaker-embedding attackers."""

    architecture: ClassVar[str] = ""
    sample_rate: ClassVar[int] = 16000
    needs_training: ClassVar[bool] = True
    device_sensitive: ClassVar[bool] = True
    Params: ClassVar[type[AsvParams]] = AsvParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._embedder = None
        self._backend = None
        self.training_result = None
        self._stored_curve: list[dict] = []  # the epochs of a model read back from the cache (history.json)
        self._start_folder: Path | None = None

    # -- model ----------------------------------------------------------------------------

    @property
    def model_config(self):
        from vpeval_asv.models import ModelConfig

        p = self.params
        return ModelConfig(self.architecture, p.n_mels, tuple(p.channels), p.embedding_dim, self.sample_rate)

    def _fresh_embedder(self):
        import torch

        from vpeval_asv.checkpoint import load_weights
        from vpeval_asv.models import build_embedding_model

        start = self.params.init_from or self._start_folder
        if start:
            _, model = load_weights(start, f"{self.name}.init_from", expected=self.model_config)
            self.context.log.info("%s: fine-tuning from %s", self.name, start)
        else:
            with torch.random.fork_rng(devices=[]):  # built on the CPU: the same initial weights on any device
                torch.manual_seed(self.context.torch_seed(self.name, "model"))
                model = build_embedding_model(self.model_config)
        return self._embedder_of(self.model_config, model)

    def _embedder_of(self, config, model):
        """An Embedder on the run's device, with the run's precision and the embedding batch parameters."""
        from vpeval_asv.embedding import Embedder

        p = self.params
        return Embedder(
            config,
            model,
            p.embed_max_seconds,
            device=self.context.device,
            batch_size=p.embed_batch_size,
            batch_frames=p.embed_batch_frames,
            autocast=self.context.autocast,
        )

    @property
    def embedder(self):
        if self._embedder is None:
            raise RuntimeError(f"attacker {self.name} has no model yet: call train() or load() first")
        return self._embedder

    # -- training -------------------------------------------------------------------------

    def train(self, data: TrainingData) -> None:
        import torch

        from vpeval_asv.training import train_network
        from vpeval_torch.validation import ValidationTrials, hold_out

        self.context.apply_threads()
        corpus = data.corpus
        if len(corpus.speakers) < 2:
            raise DataError(
                f"The {self.name} attacker needs training speech of at least two speakers, got "
                f"{len(corpus.speakers)}; give the experiment more attacker-training speakers."
            )
        rng = self.context.rng(self.name, "validation")
        if data.validation is not None and len(data.validation):
            train_utts, held = list(corpus.utterances), list(data.validation.utterances)
        else:
            train_utts, held = hold_out(corpus, self.params.validation_share, rng)
        trials = ValidationTrials.draw(held, self.params.validation_trials, self.params.validation_max_utterances, rng)
        if trials is None:
            self.context.log.warning(
                "%s: no validation trials (too few held-out utterances); keeping the last epoch", self.name
            )
        self._embedder = self._fresh_embedder()
        self.context.log.info("%s: scenario %s, stages %s", self.name, data.scenario, [s.name for s in data.stages])
        # The run's training threads, never the default workers (every core): the same weights on any machine.
        torch.set_num_threads(self.context.training_threads)
        try:
            self.training_result = train_network(
                self._embedder, train_utts, trials, self.params, self.context, self.name
            )
        finally:
            self.context.apply_threads()
        self._embedder.forget()
        self._backend = self._fit_backend(corpus.utterances)

    def _fit_backend(self, utterances: Sequence[Utterance]):
        from vpeval_asv.backends import Backend, Plda
        from vpeval_torch.validation import length_normalise

        p = self.params
        if p.backend == "cosine" and not p.as_norm:
            return Backend("cosine")
        rng = self.context.rng(self.name, "backend")
        by_speaker: dict[str, list[Utterance]] = {}
        for u in utterances:
            by_speaker.setdefault(u.speaker, []).append(u)
        chosen: list[Utterance] = []
        for utts in by_speaker.values():
            keep = rng.permutation(len(utts))[: p.backend_utterances_per_speaker]
            chosen.extend(utts[i] for i in sorted(keep))
        embeddings = self.embedder.embed_utterances(
            chosen, description=f"{self.name}: back-end embeddings", context=self.context
        )
        speakers = np.array([u.speaker for u in chosen])
        plda = Plda.fit(embeddings, speakers, p.plda_dim) if p.backend == "plda" else None
        cohort = None
        if p.as_norm:
            normed = length_normalise(embeddings)
            cohort = np.stack([normed[speakers == s].mean(axis=0) for s in dict.fromkeys(speakers)])
        return Backend(p.backend, plda, cohort, p.cohort_top_k)

    # -- cache ----------------------------------------------------------------------------

    def save(self, folder: Path) -> None:
        from vpeval_asv.checkpoint import HISTORY, save_backend, save_model

        folder = Path(folder)
        save_model(folder, self.model_config, self.embedder.model)
        if self._backend is not None:
            save_backend(folder, self._backend.to_arrays())
        if self.training_result is not None:
            history = {
                "best_epoch": self.training_result.best_epoch,
                "stopped_early": self.training_result.stopped_early,
                "epochs": [asdict(r) for r in self.training_result.history],
            }
            (folder / HISTORY).write_text(json.dumps(history, indent=2))

    def init_from(self, folder: Path) -> None:
        """Fine-tune from another attacker's saved model (the experiment's `init_from: <label>`)."""
        self._start_folder = Path(folder)

    def load(self, folder: Path) -> None:
        from vpeval_asv.backends import Backend
        from vpeval_asv.checkpoint import HISTORY, load_backend, load_weights

        self.context.apply_threads()
        config, model = load_weights(folder, f"{self.name} cache folder", expected=self.model_config)
        self._embedder = self._embedder_of(config, model)
        arrays = load_backend(Path(folder))
        self._backend = Backend.from_arrays(arrays) if arrays is not None else Backend("cosine")
        history = Path(folder) / HISTORY
        self._stored_curve = _curve(json.loads(history.read_text())) if history.is_file() else []

    def training_curve(self) -> list[dict]:
        """Epochs with loss and validation EER, the kept one marked: after `train`, or as the cache stored them."""
        if self.training_result is None:
            return list(self._stored_curve)
        r = self.training_result
        return _curve({"best_epoch": r.best_epoch, "epochs": [asdict(e) for e in r.history]})

    # -- trials ---------------------------------------------------------------------------

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return self.represent_many([utterances])[0]

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        """Each side's mean length-normalised embedding [S, D]; every distinct utterance is embedded once."""
        from vpeval_torch.validation import length_normalise

        self.context.apply_threads()
        require_utterances(sides, self.name)
        return side_means_by(  # each distinct utterance embedded and normalised once, then gathered per side
            sides,
            lambda distinct: length_normalise(
                self.embedder.embed_utterances(distinct, description=f"{self.name}: embed", context=self.context)
            ),
        )

    def score(self, enroll: np.ndarray, test: np.ndarray) -> np.ndarray:
        from vpeval_asv.backends import Backend

        backend = self._backend if self._backend is not None else Backend("cosine")
        return backend.score(np.asarray(enroll, dtype=np.float64), np.asarray(test, dtype=np.float64))

    def _progress(self, items, total, description):
        return self.context.progress(items, total=total, description=description)


class EcapaAttacker(AsvAttacker):
    """ECAPA-TDNN speaker verification attacker trained in vpeval (VoicePrivacy 2024 ASV_eval)."""

    name: ClassVar[str] = "ecapa"
    architecture: ClassVar[str] = "ecapa"
    Params: ClassVar[type[EcapaParams]] = EcapaParams


class XvectorAttacker(AsvAttacker):
    """TDNN x-vector speaker verification attacker trained in vpeval (VoicePrivacy x-vector recipe)."""

    name: ClassVar[str] = "xvector"
    architecture: ClassVar[str] = "xvector"
    Params: ClassVar[type[XvectorParams]] = XvectorParams


def _curve(history: dict) -> list[dict]:
    best = history.get("best_epoch")
    return [{**epoch, "selected": epoch.get("epoch") == best} for epoch in history.get("epochs", [])]
