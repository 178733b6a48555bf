"""The dast attacker: trains the dual-stream network through the declared stages, then embeds trial
sides (mean of length-normalised utterance embeddings) and scores them by cosine (section 3.2).

Everything runs on the run's device (`context.device`, under `context.autocast()`): training in this
process with crops streamed from disk, embedding in padded length buckets of `embed_batch_size`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from vpeval.api import Attacker
from vpeval.errors import DataError
from vpeval.sides import require_utterances
from vpeval.types import TrainingData, Utterance
from vpeval_dast.params import DastParams

SSL_STORE_VERSION = "1"  # bump when the stored states' layout or computation changes


class DastAttacker(Attacker):
    """DAST: dual-stream (Fbank + weighted-sum SSL) ECAPA-TDNN attacker with three-stage training (seed 001)."""

    name: ClassVar[str] = "dast"
    sample_rate: ClassVar[int] = 16000
    needs_training: ClassVar[bool] = True
    device_sensitive: ClassVar[bool] = True
    Params: ClassVar[type[DastParams]] = DastParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._ssl = None
        self._embedder = None
        self._start_folder: Path | None = None
        self.stages_done: list[str] = []
        self.stage_records: list = []
        self._stored_records: list[dict] = []  # the stages of a model read back from the cache (history.json)
        self._snapshots: dict[str, tuple[dict, list[str]]] = {}

    # -- experiment validation --------------------------------------------------------------

    @classmethod
    def check_experiment(
        cls, params: Mapping[str, Any] | DastParams, target_anonymizers: Mapping[str, Sequence[str]] | Sequence[str]
    ) -> list[str]:
        """Sentences for what the experiment as a whole gets wrong: Stage II anonymizers that are also targets.

        target_anonymizers: {label: plugin names of its steps} of the anonymizers the attacker is evaluated
        on, or just their plugin names.
        """
        from vpeval_dast.curriculum import overlap_errors

        p = params if isinstance(params, DastParams) else cls.Params.model_validate(dict(params))
        targets = (
            target_anonymizers if isinstance(target_anonymizers, Mapping) else {n: [n] for n in target_anonymizers}
        )
        return overlap_errors(p, targets)

    # -- model ------------------------------------------------------------------------------

    def _ssl_stream(self):
        if self._ssl is None and self.params.uses_ssl:
            from vpeval_dast.ssl import load_ssl

            self._ssl = load_ssl(self.params.ssl, self.context).to(self.context.device)
        return self._ssl

    def network_config(self):
        from vpeval_dast.model import NetworkConfig

        p, ssl = self.params, self._ssl_stream()
        return NetworkConfig(
            p.fusion,
            p.n_mels,
            ssl.layers if ssl else 0,
            ssl.dim if ssl else 0,
            tuple(p.channels),
            p.attention_channels,
            p.embedding_dim,
        )

    def _new_embedder(self):
        import torch

        from vpeval_dast.embedding import Embedder, SslStore
        from vpeval_dast.model import DastNetwork, SpecAugment

        p, context = self.params, self.context
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(context.torch_seed(self.name, "model"))
            network = DastNetwork(self.network_config())  # built on the CPU: the same initial weights anywhere
        augment = SpecAugment(p.freq_masks, p.freq_mask_width, p.time_masks, p.time_mask_width)
        ssl = self._ssl_stream()
        store = (
            SslStore(self._ssl_store_folder(), ssl, context.device, context.autocast)
            if ssl is not None and p.ssl_context == "utterance"
            else None
        )
        ssl_augment = (
            augment.for_stream(p.n_mels, ssl.dim, self.sample_rate / ssl.hop)
            if ssl is not None and p.specaugment_streams == "both"
            else None
        )
        return Embedder(
            network,
            ssl,
            augment,
            p.embed_max_seconds,
            store,
            ssl_augment,
            device=context.device,
            autocast=context.autocast,
            batch_size=p.embed_batch_size,
        )

    def _ssl_store_folder(self) -> Path:
        """Where whole-utterance SSL states go: in a run, a folder of the run cache named by the SSL model and
        the numbers' device and precision, shared by the run's dast attackers; outside a run, the work folder."""
        from vpeval.content_cache import identity_digest
        from vpeval.device import numerics_identity

        identity = identity_digest(
            self.params.ssl.model_dump_json(),
            json.dumps(numerics_identity(self.context.device, self.context.precision), sort_keys=True),
            SSL_STORE_VERSION,
        )[:16]
        root = self.context.options.get("cache_root")
        if not root:
            return self.context.folder("ssl-states", identity)
        return Path(root) / "work" / "dast-ssl" / identity

    @property
    def embedder(self):
        if self._embedder is None:
            raise RuntimeError(f"attacker {self.name} has no model yet: call train() or load() first")
        return self._embedder

    # -- training ---------------------------------------------------------------------------

    def init_from(self, folder: Path) -> None:
        """Start from another dast attacker's saved network (not its head): the experiment's `init_from`."""
        self._start_folder = Path(folder)

    def check_data(self, data: TrainingData) -> None:
        """Stop with one sentence if the core did not give the speech the declared stages need."""
        from vpeval_dast.curriculum import split_stages

        p = self.params
        original, target = split_stages(data)
        needs_original = [
            s for s in p.stages if (s == "I" and p.stage_corpus("I") is None) or (s == "II" and p.stage2_anonymizers)
        ]
        if original is None and needs_original:
            raise DataError(
                f"The {self.name} attacker's stages {'+'.join(needs_original)} "
                "train on original speech (Stage II's stage2_anonymizers convert it), but train_on: anonymized gives "
                "only the target's output; give those stages a corpus (stage1.corpus, stage2_corpora), or train them "
                "in a dast attacker with train_on: original and start this one from it with init_from."
            )
        if target is None and "III" in p.stages and p.stage_corpus("III") is None:
            raise DataError(
                f"The {self.name} attacker's Stage III adapts to the target anonymizer's output; set "
                "train_on: anonymized, give stage3.corpus (the target's anonymized training data), or leave III out "
                "of stages."
            )

    def stage_utterances(self, data: TrainingData) -> dict[str, list[Utterance]]:
        """Each declared stage's training utterances (Stage II's converted here)."""
        from vpeval_dast.curriculum import convert_for_stage2, fraction_per_speaker, read_corpus, split_stages

        p = self.params
        self.check_data(data)
        original, target = split_stages(data)
        out = {}
        for stage in p.stages:
            corpus = p.stage_corpus(stage)
            if corpus is not None:
                corpus = read_corpus(corpus, self.context, {"I": "stage1", "III": "stage3"}[stage] + ".corpus")
            if stage == "I":
                out[stage] = list((corpus or original).utterances)
            elif stage == "II":
                out[stage] = convert_for_stage2(original, p, self.context.child("stage2"))
            else:
                out[stage] = fraction_per_speaker(corpus or target, p.stage3_fraction, self.context)
            if len({u.speaker for u in out[stage]}) < 2:
                raise DataError(
                    f"Stage {stage} of the {self.name} attacker needs speech of at least two speakers; "
                    "give the experiment more attacker-training speakers."
                )
        return out

    def train(self, data: TrainingData) -> None:
        import torch

        from vpeval_dast.checkpoint import load_into, snapshot
        from vpeval_dast.training import train_stage

        self.context.apply_threads()
        self.check_data(data)
        self._embedder = self._new_embedder()
        p = self.params
        start = p.init_from or self._start_folder
        self.stages_done = []
        if start:  # before Stage II's conversions, so a wrong checkpoint stops the run at once
            self.stages_done = load_into(self._embedder.network, start, f"{self.name} init_from")
            self.context.log.info("%s: starting from %s (stages %s done there)", self.name, start, self.stages_done)
        stage_data = self.stage_utterances(data)
        validation = self._validation_trials(data)
        # The run's training threads, never the default workers (every core): the same weights on any machine.
        torch.set_num_threads(self.context.training_threads)
        try:
            for stage in p.stages:
                record = train_stage(self._embedder, stage_data[stage], stage, p, self.context, self.name, validation)
                self.stage_records.append(record)
                self.stages_done = [*self.stages_done, stage]
                self._snapshots[stage] = (snapshot(self._embedder.network), list(self.stages_done))
        finally:
            self.context.apply_threads()

    def _validation_trials(self, data: TrainingData):
        """Trials on the experiment's validation speakers (in the training scenario), drawn once from the
        seed and scored after every epoch; None without validation speakers (the experiment's
        `validation_speakers: 0`), and then the report says no validation EER was recorded."""
        from vpeval_torch.validation import ValidationTrials

        if data.validation is None or not len(data.validation):
            return None
        p = self.params
        trials = ValidationTrials.draw(
            data.validation.utterances,
            p.validation_trials,
            p.validation_max_utterances,
            self.context.rng(self.name, "validation"),
        )
        if trials is None:
            self.context.log.warning("%s: too few validation utterances for target and non-target trials", self.name)
        return trials

    # -- cache ------------------------------------------------------------------------------

    def save(self, folder: Path) -> None:
        from vpeval_dast.checkpoint import HISTORY, STAGES, save_network

        folder = Path(folder)
        config, ssl = self.embedder.network.config, self.params.ssl.model_dump(mode="json")
        save_network(folder, self.embedder.network, config, ssl, self.stages_done)
        for stage, (state, done) in self._snapshots.items():
            save_network(folder / STAGES / stage, state, config, ssl, done)
        if self.stage_records:
            (folder / HISTORY).write_text(json.dumps([asdict(r) for r in self.stage_records], indent=2))

    def load(self, folder: Path) -> None:
        from vpeval_dast.checkpoint import HISTORY, load_into

        self.context.apply_threads()
        self._embedder = self._new_embedder()
        self.stages_done = load_into(self._embedder.network, folder, f"{self.name} cache folder")
        self._embedder.network.eval()
        history = Path(folder) / HISTORY
        self._stored_records = json.loads(history.read_text()) if history.is_file() else []

    def training_curve(self) -> list[dict]:
        """Each stage's epochs with their loss and, where validation speakers were given, validation EER;
        fixed epochs, so each stage's last epoch is the one kept: after `train`, or as stored."""
        records = [asdict(r) for r in self.stage_records] or self._stored_records
        curve = []
        for r in records:
            eers, losses = r.get("validation_eers", []), r.get("losses", [])
            for i, loss in enumerate(losses):
                epoch = {"stage": r["stage"], "epoch": i + 1, "loss": loss, "selected": i == len(losses) - 1}
                if i < len(eers):
                    epoch["validation_eer"] = eers[i]
                curve.append(epoch)
        return curve

    # -- trials -----------------------------------------------------------------------------

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return self.represent_many([utterances])[0]

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        """Each side's mean embedding [S, E] (averaged enrollment and test, section 3.2); `average:
        unit-embeddings` averages their unit vectors instead."""
        from vpeval_dast.embedding import length_normalise

        self.context.apply_threads()
        require_utterances(sides, self.name)
        flat = [u for side in sides for u in side]
        embeddings = self.embedder.embed_utterances(flat, self.context, f"{self.name}: embed")
        if self.params.average == "unit-embeddings":
            embeddings = length_normalise(embeddings)
        bounds = np.cumsum([0, *(len(side) for side in sides)])
        return np.stack([embeddings[a:b].mean(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])
