"""spinv: the Speaker Inversion Attack of seed 002 as a vpeval attacker."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from vpeval.api import Attacker, Params
from vpeval.errors import DataError
from vpeval.speakers import EncoderSpec
from vpeval.types import Corpus, FrontendOutput, TrainingData, Utterance

STAGE_A_WEIGHTS = {"align": 1.0, "rel": 0.5, "dino": 1.0, "var": 25.0, "cov": 1.0}  # lambda_1..5, section IV
STAGE_B_WEIGHTS = {"spk": 0.2, "align": 0.8, "rel": 0.4, "dino": 0.4, "var": 10.0, "cov": 0.5}  # mu_1..6


class StageAWeights(Params):
    align: float = Field(STAGE_A_WEIGHTS["align"], ge=0, le=1000, description="lambda_1, eq. 7")
    rel: float = Field(STAGE_A_WEIGHTS["rel"], ge=0, le=1000, description="lambda_2, eq. 8")
    dino: float = Field(STAGE_A_WEIGHTS["dino"], ge=0, le=1000, description="lambda_3, eq. 9")
    var: float = Field(STAGE_A_WEIGHTS["var"], ge=0, le=1000, description="lambda_4, eq. 10")
    cov: float = Field(STAGE_A_WEIGHTS["cov"], ge=0, le=1000, description="lambda_5, eq. 11")


class StageBWeights(Params):
    spk: float = Field(STAGE_B_WEIGHTS["spk"], ge=0, le=1000, description="mu_1, eq. 13")
    align: float = Field(STAGE_B_WEIGHTS["align"], ge=0, le=1000, description="mu_2, eq. 7")
    rel: float = Field(STAGE_B_WEIGHTS["rel"], ge=0, le=1000, description="mu_3, eq. 8")
    dino: float = Field(STAGE_B_WEIGHTS["dino"], ge=0, le=1000, description="mu_4, eq. 9")
    var: float = Field(STAGE_B_WEIGHTS["var"], ge=0, le=1000, description="mu_5, eq. 10")
    cov: float = Field(STAGE_B_WEIGHTS["cov"], ge=0, le=1000, description="mu_6, eq. 11")


class SpInvParams(Params):
    target_encoder: EncoderSpec = Field(
        default_factory=lambda: EncoderSpec(use="ge2e"),
        description="The frozen speaker encoder F whose space is recovered {use, params} "
        "(the paper: ECAPA-TDNN; here GE2E, packaged).",
    )
    observed_seconds: float = Field(
        3.0,
        gt=0,
        le=60,
        description="Seconds of frontend output the attack observes per utterance (Table IV sweeps 1-10).",
    )
    compare: Literal["target", "recovered"] = Field(
        "target",
        description="target: recovered test side against the target encoder's embedding of the enrollment audio; "
        "recovered: recovered embeddings on both sides (tokens only, the token-probe setting).",
    )
    trial_list: str | None = Field(
        None,
        description="Verification trials of the inversion metric: a VoxCeleb1-O ('1 enroll test') or Kaldi ('enroll "
        "test target') list over the evaluation utterances; null: every pair of different utterances.",
    )
    max_pairs: int = Field(
        1_000_000,
        ge=2,
        le=1_000_000_000,
        description="Without a trial_list, at most this many pairs: beyond it a seeded sample (noted in the result).",
    )
    # AuB and heads (section IV: d_h 384, d_a 512; depth and heads are not given)
    hidden: int = Field(384, ge=4, le=4096, description="AuB hidden size d_h (paper: 384).")
    layers: int = Field(6, ge=1, le=48, description="Transformer layers (not given in the paper).")
    heads: int = Field(6, ge=1, le=64, description="Attention heads (not given; must divide hidden).")
    output_dim: int = Field(512, ge=2, le=8192, description="AuB output d_a (paper: 512).")
    dropout: float = Field(0.1, ge=0, lt=1, description="Dropout in AuB (BERT's 0.1; not given).")
    dino_prototypes: int = Field(1024, ge=2, le=262144, description="K prototypes of the DINO head (not given).")
    dino_hidden: int = Field(2048, ge=2, le=16384, description="DINO head MLP width (DINO's 2048).")
    dino_bottleneck: int = Field(256, ge=2, le=4096, description="DINO head bottleneck (DINO's 256).")
    student_temperature: float = Field(
        0.1, gt=0, le=100, description="tau_s of the student distribution (DINO's 0.1; not given)."
    )
    teacher_temperature: float = Field(
        0.04, gt=0, le=100, description="tau_t of the sharpened teacher (DINO's 0.04; not given)."
    )
    center_momentum: float = Field(0.9, ge=0, lt=1, description="DINO centre momentum (paper: 0.9).")
    ema_start: float = Field(0.996, ge=0, le=1, description="EMA teacher momentum at the first step (paper: 0.996).")
    ema_end: float = Field(
        0.9995, ge=0, le=1, description="EMA momentum at the last step, cosine schedule (paper: 0.9995)."
    )
    var_gamma: float = Field(1.0, gt=0, le=1000, description="gamma of eq. 10 (VICReg's 1).")
    var_epsilon: float = Field(1e-4, gt=0, le=1, description="epsilon of eq. 10 (VICReg's 1e-4).")
    # views (lengths not given in the paper)
    local_seconds: float = Field(3.0, gt=0, le=60, description="Length of the two local (student) views.")
    global_seconds: float = Field(6.0, gt=0, le=60, description="Length of the two global (EMA teacher) views.")
    teacher_seconds: float | None = Field(
        None, gt=0, le=600, description="Length of the teacher view for F; null: the whole utterance (embedded once)."
    )
    views_from: Literal["waveform", "frames"] = Field(
        "waveform",
        description="waveform: cut each view from the audio and encode it (the paper); frames: encode each training "
        "utterance once and cut the views from its output (a shortcut for slow frontends on a CPU).",
    )
    select_stage_a: Literal["validation", "last"] = Field(
        "validation",
        description="Stage A checkpoint Stage B starts from: the epoch with the best validation CosSim (when the "
        "experiment has validation speakers), or the last.",
    )
    # optimisation (section IV)
    batch_size: int = Field(96, ge=2, le=4096, description="Utterances per batch (paper: 96).")
    stage_a_epochs: int = Field(60, ge=0, le=10000, description="Stage A epochs (paper: 60).")
    stage_a_lr: float = Field(4e-4, gt=0, le=1, description="Stage A Adam learning rate (paper: 4e-4).")
    stage_a_weights: StageAWeights = Field(default_factory=StageAWeights, description="lambda_1..5 of eq. 6.")
    stage_b_epochs: int = Field(40, ge=0, le=10000, description="Stage B epochs (paper: 40; 0 skips Stage B).")
    stage_b_lr: float = Field(1e-4, gt=0, le=1, description="Stage B Adam learning rate (paper: 1e-4).")
    stage_b_weights: StageBWeights = Field(default_factory=StageBWeights, description="mu_1..6 of eq. 12.")
    margin: float = Field(0.2, ge=0, lt=1.5, description="Final ArcMargin margin m (paper: 0.2).")
    margin_ramp_start: int = Field(
        10, ge=0, le=10_000, description="Stage B epoch where the margin starts rising from 0 (paper: 10)."
    )
    margin_ramp_end: int = Field(
        20, ge=0, le=10_000, description="Stage B epoch where the margin reaches its final value (paper: 20)."
    )
    arc_scale: float = Field(
        30.0, gt=0, le=100, description="ArcMargin logit scale s (not given; 30 as in ArcFace speaker models)."
    )

    @model_validator(mode="after")
    def _consistent(self):
        if self.hidden % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide hidden ({self.hidden})")
        if self.margin_ramp_end < self.margin_ramp_start:
            raise ValueError("margin_ramp_end must not come before margin_ramp_start")
        if self.ema_end < self.ema_start:
            raise ValueError("ema_end must be at least ema_start (the teacher slows down over training)")
        if self.observed_seconds > max(self.local_seconds, self.global_seconds):
            raise ValueError(
                f"observed_seconds ({self.observed_seconds}) is longer than the training views (local_seconds "
                f"{self.local_seconds}, global_seconds {self.global_seconds}), so G has no positions for it; "
                "raise local_seconds to at least the observed duration"
            )
        return self


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
        folder = shared_folder(self, training_identity(self, corpus, data.validation))
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


def _mean_unit(vectors: list[np.ndarray]) -> np.ndarray:
    units = [v / max(float(np.linalg.norm(v)), 1e-12) for v in vectors]
    mean = np.mean(units, axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float64)


def _key(utterance: Utterance) -> tuple[str, str]:
    return (utterance.id, utterance.path)
