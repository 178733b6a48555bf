"""spinv: the Speaker Inversion Attack of seed 002 as a vpeval attacker."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vpeval.api import Attacker
from vpeval.errors import DataError
from vpeval.types import Corpus, FrontendOutput, TrainingData, Utterance
from vpeval_spinv.params import SpInvParams


class SpInv(Attacker):
    """SpInv: recovers a target encoder's speaker embedding from a slice of frontend tokens/features.

    AuB (BERT-style encoder over per-codebook token embeddings and fused features) + projection head,
    trained by distillation from a frozen speaker encoder with an EMA/DINO teacher (Stage A) and
    ArcMargin fine-tuning (Stage B), seed 002. Sides are compared in the target encoder's space.
    """

    name = "spinv"
    device_sensitive = True  # G trains and runs on the experiment's device and precision
    uses_frontend = True
    needs_training = True
    sample_rate = 16000  # nominal: audio is read at the frontend's and the encoder's own rates
    Params = SpInvParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self.model = None  # Recovery (G) after train/load
        self.config: dict | None = None
        self.history: list[dict] = []
        self._encoder = None
        self._targets: dict[tuple[str, str], np.ndarray] = {}
        self._recovered: dict[tuple[str, str], np.ndarray] = {}

    @classmethod
    def check_experiment(cls, params, anonymizers) -> list[str]:
        """A trial_list that is not a file is refused at validate time, before anything trains."""
        trial_list = dict(params).get("trial_list")
        if trial_list and not Path(trial_list).expanduser().is_file():
            return [f"trial_list {trial_list} is not a file; give a VoxCeleb1-O or Kaldi trial list file."]
        return []

    # -- parts ----------------------------------------------------------------------------------

    def attacked_frontend(self):
        """The frontend whose output G reads (set by the core); one DataError sentence when the experiment names
        none."""
        if self.frontend is None:
            raise DataError("spinv attacks a frontend's output; name one in the experiment (frontend: <name>).")
        return self.frontend

    @property
    def encoder(self):
        """The frozen target speaker encoder F, made by the core from `target_encoder`."""
        if self._encoder is None:
            spec = self.params.target_encoder
            self._encoder = self.context.get("encoder", spec.use, dict(spec.params))
        return self._encoder

    def target_embedding(self, utterance: Utterance) -> np.ndarray:
        """z = F(x) of the whole utterance (cached)."""
        key = _key(utterance)
        if key not in self._targets:
            self._targets[key] = self.embed_waveform(utterance.load(self.encoder.sample_rate))
        return self._targets[key]

    def target_embeddings(self, utterances: Sequence[Utterance]) -> list[np.ndarray]:
        """z = F(x) of many utterances, from the run's content cache where present (every spinv attacker
        of a run with the same target encoder shares them), else computed with the run's workers."""
        from vpeval.content_cache import cached_batches, cached_map
        from vpeval_spinv.shared import target_extractor

        todo = list({_key(u): u for u in utterances if _key(u) not in self._targets}.values())
        if todo:
            prepare = getattr(self.encoder, "prepare", None)
            if prepare is not None:
                prepare()  # load (or train) once, before any worker forks
            rate = self.encoder.sample_rate
            if self.context.on_gpu:  # batched in this process: CUDA does not survive a fork
                vectors = cached_batches(
                    self.context,
                    todo,
                    target_extractor(self),
                    lambda us: self.embed_waveforms([u.load(rate) for u in us]),
                    self.params.batch_size,
                    "spinv: target embeddings",
                )
            else:
                vectors = cached_map(
                    self.context,
                    todo,
                    target_extractor(self),
                    lambda u: self.embed_waveform(u.load(rate)),
                    "spinv: target embeddings",
                )
            self._targets.update((_key(u), np.asarray(v, dtype=np.float32)) for u, v in zip(todo, vectors))
        return [self._targets[_key(u)] for u in utterances]

    def embed_waveform(self, audio: np.ndarray) -> np.ndarray:
        """z = F(audio) of a waveform at the target encoder's sample rate (a whole utterance or a crop),
        uncached; DataError when F returns a non-finite value."""
        vector = np.asarray(self.encoder.embed(audio), dtype=np.float32).reshape(-1)
        if not np.isfinite(vector).all():
            raise DataError(f"The target encoder {self.params.target_encoder.use} returned NaN or infinite values.")
        return vector

    def embed_waveforms(self, audios: Sequence[np.ndarray]) -> np.ndarray:
        """z = F(audio) of many waveforms [B, d_z] in one embed_batch call (batched on the run's device)."""
        vectors = np.asarray(self.encoder.embed_batch(list(audios)), dtype=np.float32).reshape(len(audios), -1)
        if not np.isfinite(vectors).all():
            raise DataError(f"The target encoder {self.params.target_encoder.use} returned NaN or infinite values.")
        return vectors

    def frontend_output(self, audio: np.ndarray) -> FrontendOutput:
        """The attacked frontend's output (tokens and/or features) for a waveform at the frontend's sample rate."""
        return self.frontend_outputs([audio])[0]

    def frontend_outputs(self, audios: Sequence[np.ndarray]) -> list[FrontendOutput]:
        """The attacked frontend's outputs for many waveforms: one encode_batch call (padded batches on the
        run's device for the torch frontends, equal to encode of each)."""
        return self.attacked_frontend().encode_batch(list(audios))

    def frames_for(self, seconds: float, frame_rate: float) -> int:
        """Frames of `seconds` of frontend output: the count the frontend emits for a waveform that long
        where it tells (a `frames(samples)` method: mimi, higgs, qwen), else ceil(seconds x frame_rate)."""
        from vpeval_spinv.views import frames_for

        frontend = self.attacked_frontend()
        emitted = getattr(frontend, "frames", None)
        if callable(emitted):
            return max(1, int(emitted(int(round(seconds * frontend.sample_rate)))))
        return frames_for(seconds, frame_rate)

    # -- training -------------------------------------------------------------------------------

    def train(self, data: TrainingData) -> None:
        from vpeval_spinv.fit import fit_spinv
        from vpeval_spinv.shared import SAVED, shared_folder, store, training_identity

        self.context.apply_threads()
        corpus = data.corpus
        if len(corpus) < 2 or len(corpus.speakers) < 2:
            raise DataError(
                "spinv needs training speech of at least two utterances and two speakers (attacker-train split)."
            )
        # attackers differing only in compare / observed_seconds share one trained G (shared.py)
        folder = shared_folder(self, training_identity(self, corpus, data.validation, training_code()))
        if folder is not None and (folder / SAVED).is_file():
            self.context.log.info(
                "spinv: reusing the model trained for the same training parameters (%s)", folder.name[:12]
            )
            self.load(folder)
            return
        self.model, self.config, self.history = fit_spinv(self, corpus, data.validation)
        self.model.to(self.context.device)
        self._recovered.clear()
        if folder is not None:
            store(self, folder)

    # -- attack ---------------------------------------------------------------------------------

    def recover(self, utterance: Utterance) -> np.ndarray:
        """ẑ = G(a contiguous `observed_seconds` slice of the frontend output), slice start seeded by the
        utterance id."""
        return self.recover_many([utterance])[0]

    def recover_many(self, utterances: Sequence[Utterance]) -> list[np.ndarray]:
        """recover() of many utterances: batch_size at a time through the frontend (encode_batch) and G
        (padded, masked batches on the run's device). Each G row sees only its own frames (key padding
        mask), so a batch gives each utterance what it gets alone, within float rounding (tests)."""
        import torch

        from vpeval_spinv.views import collate, layout_of, slice_output

        todo = list({_key(u): u for u in utterances if _key(u) not in self._recovered}.values())
        if todo and self.model is None:
            raise RuntimeError("spinv: train() or load() before represent().")
        rate = self.attacked_frontend().sample_rate
        step = self.params.batch_size
        for start in range(0, len(todo), step):
            chunk = todo[start : start + step]
            observed = []
            for utterance, output in zip(chunk, self.frontend_outputs([u.load(rate) for u in chunk])):
                trained_on = self.model.aub.layout
                if layout_of(output) != trained_on:
                    raise DataError(
                        f"The frontend's output for {utterance.path} has {layout_of(output)}, but spinv was trained "
                        f"on {trained_on}; retrain it with this frontend."
                    )
                rng = self.context.rng("spinv-slice", utterance.id)
                observed.append(slice_output(output, self.params.observed_seconds, rng, self.frames_for))
            batch = collate(observed, self.model.aub.layout, self.model.aub.max_frames, self.context.device)
            with torch.no_grad(), self.context.autocast():
                recovered = self.model(batch)[0].float().cpu().numpy().astype(np.float32)
            self._recovered.update((_key(u), row) for u, row in zip(chunk, recovered))
        return [self._recovered[_key(u)] for u in utterances]

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """[mean unit ẑ] (compare: recovered) or [mean unit ẑ, mean unit z] (compare: target): the
        enrollment side then offers F's embedding of its audio and the test side its recovered one."""
        recovered = _mean_unit([self.recover(u) for u in utterances])
        if self.params.compare == "recovered":
            return recovered
        return np.concatenate([recovered, _mean_unit(self.target_embeddings(utterances))])

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        self.recover_many([u for side in sides for u in side])  # every distinct utterance, in batches
        if self.params.compare == "target":  # every target embedding at once, through the content cache
            self.target_embeddings([u for side in sides for u in side])
        return super().represent_many(sides)

    def score(self, enroll: np.ndarray, test: np.ndarray) -> np.ndarray:
        """Cosine of the test side's recovered embedding with the enrollment side's target (or recovered) one."""
        from vpeval.api import cosine_rows

        if self.params.compare == "recovered":
            return cosine_rows(enroll, test)
        dim = enroll.shape[1] // 2
        return cosine_rows(enroll[:, dim:], test[:, :dim])

    def inversion_embeddings(
        self, corpus: Corpus, reference: Corpus | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(recovered [U, d_z], target [U, d_z], speakers [U]) for every utterance of `corpus`, in its
        order: the inputs of the `inversion` metric (seed 002, eq. 14-15 and its verification numbers).

        ẑ comes from `corpus` (e.g. anonymized speech); z = F(x) from the utterance of the same id in
        `reference` (e.g. the original speech), `corpus` itself by default.
        """
        reference = corpus if reference is None else reference
        missing = [u.id for u in corpus.utterances if u.id not in reference]
        if missing:
            raise DataError(
                f"spinv: the reference corpus {reference.name} lacks utterance {missing[0]} of {corpus.name}; "
                "give a reference with the same utterance ids."
            )
        self.target_embeddings([reference[u.id] for u in corpus.utterances])
        step = self.params.batch_size
        for start in self.context.progress(range(0, len(corpus), step), description="spinv: invert"):
            self.recover_many(corpus.utterances[start : start + step])
        rows = [(self.recover(u), self.target_embedding(reference[u.id])) for u in corpus.utterances]
        speakers = np.array([reference[u.id].speaker for u in corpus.utterances])
        return np.stack([r for r, _ in rows]), np.stack([t for _, t in rows]), speakers

    def inversion_pairs(self, corpus: Corpus) -> tuple[np.ndarray, str] | None:
        """The inversion metric's (recovered row, target row) pairs over `corpus`: the trial list's, or None
        (every pair) when all pairs fit in max_pairs, else a sample seeded by the experiment seed."""
        from vpeval_spinv.trials import bounded_pairs, read_pair_list

        if self.params.trial_list is not None:
            pairs = read_pair_list(self.params.trial_list, corpus.utterances)
            return pairs, f"{len(pairs)} trials of {self.params.trial_list}"
        speakers = [u.speaker for u in corpus.utterances]
        return bounded_pairs(speakers, self.params.max_pairs, self.context.rng("spinv", "pairs"))

    # -- state ----------------------------------------------------------------------------------

    def training_curve(self) -> list[dict]:
        """Each stage's epochs with the total loss. Its validation is a cosine similarity to the target
        (higher is better), not an EER, so the under-training alarm does not read it; the details keep it."""
        return [
            {"stage": e.get("stage"), "epoch": int(e.get("epoch", 0)) + 1, "loss": e.get("total"),
             "validation_cosine": e.get("validation")}
            for e in self.history
        ]  # fmt: skip

    def save(self, folder: Path) -> None:
        import torch

        from vpeval.device import cpu_state_dict

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(cpu_state_dict(self.model), folder / "recovery.pt")  # loads on any device
        (folder / "config.json").write_text(json.dumps({**self.config, "history": self.history}, indent=1))

    def load(self, folder: Path) -> None:
        from vpeval.torchload import load_weights_only
        from vpeval_spinv.fit import build_recovery

        folder = Path(folder)
        saved = json.loads((folder / "config.json").read_text())
        self.history = saved.pop("history", [])
        self.config = saved
        self.model = build_recovery(saved)
        self.model.load_state_dict(load_weights_only(folder / "recovery.pt", map_location="cpu"))
        self.model.to(self.context.device).eval()
        self._recovered.clear()


def training_code() -> str:
    """Digest of the sources a trained G depends on: this module, its parameters, and fit.py with what it
    trains with (shared.py's training identity holds it)."""
    from vpeval.content_cache import source_digest
    from vpeval_spinv import fit, losses, model, params, teacher, training, views

    return source_digest(sys.modules[__name__], params, fit, losses, model, teacher, training, views)


def _mean_unit(vectors: list[np.ndarray]) -> np.ndarray:
    units = [v / max(float(np.linalg.norm(v)), 1e-12) for v in vectors]
    mean = np.mean(units, axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float64)


def _key(utterance: Utterance) -> tuple[str, str]:
    return (utterance.id, utterance.path)
