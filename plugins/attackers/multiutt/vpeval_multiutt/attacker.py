"""The multiutt attacker: one trial side of N utterances -> one speaker vector (seed 000).

Audio systems train an ECAPA-TDNN end to end with their aggregation on batches of speakers x N.
Text trains the authorship encoder contrastively. The fusion systems train their encoders first,
then the fusion layers on the frozen encoders (the paper's two-stage training), optionally on a
disjoint share of the training speakers (base_share).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import ClassVar

import numpy as np

from vpeval.api import Attacker
from vpeval.errors import ConfigError, DataError, MissingModelError
from vpeval.sides import require_utterances
from vpeval.types import Corpus, TrainingData, Utterance
from vpeval_multiutt.memory_cache import MemoryCache
from vpeval_multiutt.params import MultiUttParams
from vpeval_multiutt.parts import to_numpy
from vpeval_multiutt.systems import System, system_for

CONFIG = "config.json"
HISTORY = "history.json"
WEIGHTS = {"audio": "audio.pt", "text": "text.pt", "fusion": "fusion.pt"}
FRONTEND = "frontend"
CROSS_FRONTEND = "cross-frontend"
PROSODY_VERSION = "f0mean-rate-voiced-1"
# The parameters that decide a from-scratch encoder's weights (with its config, data, seed and code).
AUDIO_RECIPE = (
    "frame_source",
    "frame_source_params",
    "n_mels",
    "attention_heads",
    "query_temperature",
    "mean_pooling",  # the validation EER that picks the epoch reads side means
    "utterances_per_speaker",
    "speakers_per_batch",
    "crop_seconds",
    "epochs",
    "batches_per_epoch",
    "margin",
    "scale",
    "lr",
    "weight_decay",
    "grad_clip",
    "lr_step",
    "lr_gamma",
    "validation_target_trials",
    "validation_nontarget_trials",
)
TEXT_RECIPE = (
    "text_model_path",
    "luar_backbone_path",
    "text_dim",
    "text_max_tokens",
    "text_temperature",
    "text_lr",
    "text_head_lr",
    "text_batch_speakers",
    "text_epochs",
    "text_finetune",
    "attention_heads",
    "grad_clip",
    "validation_target_trials",
    "validation_nontarget_trials",
)


class MultiUttAttacker(Attacker):
    """Multi-utterance, multimodal speaker verification attacker (seed 000): audio, text and prosody over N utterances.

    Systems: mean, query-attention, frame-concat, text, audio-text, audio-prosody, hybrid, rjca, rjca-global-text,
    ssl-whisper, each a strategy class in systems.py (what it trains, fuses and how it represents a side).
    """

    name: ClassVar[str] = "multiutt"
    sample_rate: ClassVar[int] = 16000
    needs_training: ClassVar[bool] = True
    Params: ClassVar[type[MultiUttParams]] = MultiUttParams
    device_sensitive: ClassVar[bool] = True

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        from vpeval_multiutt.training import History

        self.audio = None  # AudioModel
        self.text = None  # TextModel
        self.fusion = None  # ConcatFusion or ProsodyFusion
        self.prosody_mean: np.ndarray | None = None
        self.prosody_std: np.ndarray | None = None
        self.history = History()
        self.strategy: System = system_for(self.params)  # chosen once: every per-system step lives there
        self._frames = None
        self._cross_frames = None
        self._transcriber = None
        self._start_folder: Path | None = None
        self._utterance_memo: dict | None = None
        self._map_memo = None  # MemoryCache of ECAPA frame maps during one represent_many call
        self._validation = (None, None)  # ValidationTrials of the base (encoder) and fusion stages

    # -- what the system is made of ---------------------------------------------------------

    @property
    def system(self) -> str:
        return self.params.system

    @property
    def device(self) -> str:
        """Where every network of this attacker runs (the experiment's device, resolved by the core)."""
        return self.context.device

    def tensor(self, array: np.ndarray):
        """A numpy array as a tensor on the run's device."""
        import torch

        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    @property
    def uses_audio(self) -> bool:
        return self.strategy.uses_audio

    @property
    def uses_text(self) -> bool:
        return self.strategy.uses_text

    @property
    def uses_prosody(self) -> bool:
        return self.strategy.uses_prosody

    @property
    def speaker_level(self) -> bool:
        """Whether text or prosody is summarised over the N utterances, or read per utterance."""
        return self.strategy.speaker_level

    @property
    def audio_aggregation(self) -> str:
        """The aggregation the audio network trains with; per-utterance fusions use single-utterance ECAPA."""
        return self.strategy.audio_aggregation

    @property
    def frames(self):
        if self._frames is None:
            from vpeval_multiutt.frames import make_frame_source

            p = self.params
            self._frames = make_frame_source(
                p.frame_source, p.frame_source_params, p.n_mels, p.audio_cache_mb, self.context
            )
        return self._frames

    @property
    def cross_frames(self):
        """ssl-whisper's second frame source (Whisper frames), keys and values of its cross-attention."""
        if self._cross_frames is None:
            from vpeval_multiutt.frames import make_frame_source

            p = self.params
            self._cross_frames = make_frame_source(
                p.cross_frames, p.cross_frames_params, p.n_mels, p.audio_cache_mb, self.context
            )
        return self._cross_frames

    @property
    def transcriber(self):
        if self._transcriber is None:
            from vpeval_multiutt.transcripts import Transcriber

            p = self.params
            self._transcriber = Transcriber(p.transcripts, p.asr, p.asr_params, self.context)
        return self._transcriber

    # -- building -------------------------------------------------------------------------

    def _build_audio(self, config):
        import torch

        from vpeval_multiutt.audio_model import AudioModel

        with torch.random.fork_rng(devices=[]):
            # Keyed by the aggregation, not the system: systems that share an encoder share its start (shared.py).
            torch.manual_seed(self.context.torch_seed(self.name, self.audio_aggregation, "audio"))
            model = AudioModel(
                config,
                self.audio_aggregation,
                self.params.attention_heads,
                self.params.query_temperature,
                unit_mean=self.params.mean_pooling == "unit-embeddings",
            )
        return model.to(self.device)  # built on the CPU: the same start weights on every device

    def _build_text(self):
        import torch

        from vpeval_multiutt.text_model import TextModel, resolve_text_model

        p = self.params
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.context.torch_seed(self.name, "text", self._text_episode))
            backbone = resolve_text_model(p.luar_backbone_path) if p.luar_backbone_path else None
            model = TextModel(
                resolve_text_model(p.text_model_path),
                p.text_max_tokens,
                p.attention_heads,
                p.text_dim,
                p.text_finetune,
                backbone,
            )
        return model.to(self.device)

    def _build_fusion(self):
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.context.torch_seed(self.name, self.system, "fusion"))
            fusion = self.strategy.build_fusion(self)
        return fusion.to(self.device)

    def _audio_config(self):
        from vpeval_multiutt.audio_model import AudioConfig

        p = self.params
        return AudioConfig(self.frames.dim, tuple(p.channels), p.attention_channels, p.embedding_dim)

    # -- training -------------------------------------------------------------------------

    def train(self, data: TrainingData) -> None:
        self.context.apply_threads()
        corpus = data.corpus
        if len(corpus.speakers) < 2:
            raise DataError(
                f"The {self.name} attacker needs training speech of at least two speakers, got {len(corpus.speakers)}; "
                "give the experiment more attacker-training speakers."
            )
        base, fusion = self._split_speakers(corpus)
        self._validation = self._validation_trials(data)
        if self._start_folder is not None:
            # Semi-informed (IV-C): start from the lazy model and train every part further (semi_epochs, semi_lr).
            self.load(self._start_folder)
            from vpeval_multiutt.training import History

            self.history = History()  # this model's curve is its own training, not the lazy model's
            for module in (self.audio, self.text, self.fusion):
                if module is not None:
                    module.requires_grad_(True)
            if self.text is not None:
                self.text.sentence.requires_grad_(self.params.text_finetune)
            self.context.log.info("%s: continuing from %s", self.name, self._start_folder)
        self.context.log.info(
            "%s (%s): scenario %s, stages %s", self.name, self.system, data.scenario, [s.name for s in data.stages]
        )
        if self.uses_audio:
            self.frames.fit(corpus)
            self._train_audio(base)
        if self.uses_text:
            if self.params.transcripts == "corpus" and data.scenario != "original":
                self.context.log.warning(
                    "%s: transcripts: corpus reads the reference text of anonymized speech, which an attacker "
                    "would not have; set transcripts: asr to read what the anonymized audio says",
                    self.name,
                )
            self._train_text(base)
        if self.uses_prosody:
            self._fit_prosody_normalisation(base)
        if self.strategy.uses_cross_frames:
            self.cross_frames.fit(corpus)
        if self.params.trains_fusion:
            self._train_fusion(fusion)

    @property
    def continuing(self) -> bool:
        """Semi-informed training from a lazy-informed model (init_from): the semi recipe (IV-C)."""
        return self._start_folder is not None

    def _split_speakers(self, corpus: Corpus) -> tuple[list[Utterance], list[Utterance]]:
        """(encoder-training, fusion-training) utterances; the same list when base_share is 1 or when the
        system trains no fusion layers."""
        utterances = list(corpus.utterances)
        if self.params.base_share >= 1.0 or not self.params.trains_fusion:
            return utterances, utterances
        speakers = sorted(corpus.speakers)
        order = self.context.rng(self.name, "base-fusion-split").permutation(len(speakers))
        cut = int(round(self.params.base_share * len(speakers)))
        if cut < 2 or len(speakers) - cut < 2:
            raise DataError(
                f"{self.name}: base_share {self.params.base_share} of {len(speakers)} training speakers leaves fewer "
                "than two speakers for the encoders or the fusion layers; use more speakers or base_share 1."
            )
        base = {speakers[i] for i in order[:cut]}
        return [u for u in utterances if u.speaker in base], [u for u in utterances if u.speaker not in base]

    def _validation_trials(self, data: TrainingData):
        """(base-stage, fusion-stage) validation lists from the validation speakers (IV-A): split equally
        between the stages of a two-stage system with base_share < 1 when there are at least 4, else the
        same list for both; (None, None) without validation speakers."""
        from vpeval_multiutt.validation import ValidationTrials

        p = self.params
        if data.validation is None or len(data.validation.speakers) < 2:
            self.context.log.info("%s: no validation speakers: every stage keeps its last epoch", self.name)
            return None, None
        utterances = list(data.validation.utterances)
        speakers = sorted(data.validation.speakers)
        base = fusion = utterances
        if p.trains_fusion and p.base_share < 1.0 and len(speakers) >= 4:
            order = self.context.rng(self.name, "validation-split").permutation(len(speakers))
            first = {speakers[i] for i in order[: len(speakers) // 2]}
            base = [u for u in utterances if u.speaker in first]
            fusion = [u for u in utterances if u.speaker not in first]

        def draw(us: list[Utterance], stage: str):
            rng = self.context.rng(self.name, "validation", stage)
            n = p.utterances_per_speaker
            return ValidationTrials.draw(us, n, p.validation_target_trials, p.validation_nontarget_trials, rng)

        if base is fusion:  # one list for both stages
            trials = draw(base, "base")
            return trials, trials
        return draw(base, "base"), draw(fusion, "fusion")

    def _validator(self, trials, side_vector):
        """validate() for a training loop: the EER of `side_vector(attacker, side)` on these trials."""
        if trials is None:
            return None
        return lambda: trials.eer(self._represent_sides(trials.sides, side_vector, "validate"))

    def _validation_identity(self, trials) -> list:
        return [] if trials is None else [(file_digest(u), u.channel, u.speaker) for u in trials.utterances]

    def crops(self, utterances: Sequence[Utterance], picks: np.ndarray, rng: np.random.Generator):
        """[S*N, T, F] random training crops of the picked utterances' frames (crop_seconds long)."""
        from vpeval_multiutt.frames import random_crop

        length = max(1, int(round(self.params.crop_seconds * self.frames.frame_rate)))
        return self.tensor(
            np.stack([random_crop(self.frames.frames(utterances[k]), length, rng) for k in picks.ravel()])
        )

    def _training_kwargs(self, later_stage: bool = False) -> dict:
        """later_stage: a two-stage, hybrid or semi-informed stage, whose schedule the paper does not give
        (later_stage_schedule); end-to-end training has IV-C's StepLR."""
        p = self.params
        constant = later_stage and p.later_stage_schedule == "constant"
        return dict(
            weight_decay=p.weight_decay,
            grad_clip=p.grad_clip,
            lr_step=None if constant else p.lr_step,
            lr_gamma=p.lr_gamma,
            margin=p.margin,
            scale=p.scale,
            context=self.context,
            history=self.history,
        )

    @property
    def _text_episode(self) -> int:
        """Transcripts per side the authorship encoder trains on: N, or 1 for per-utterance text."""
        return self.params.utterances_per_speaker if self.speaker_level else 1

    @property
    def _shared(self):
        """Encoders shared across systems (shared.py): in the run's cache when there is one."""
        from vpeval_multiutt.shared import SharedEncoders

        root = self.context.options.get("cache_root")
        return SharedEncoders(
            Path(root) / "work" / f"{self.name}-encoders" if root else self.context.folder("encoders")
        )

    def _shared_identity(self, fields: tuple[str, ...], **more) -> dict:
        """What decides a from-scratch encoder's weights besides its code: these parameters, seed, threads."""
        return {
            **self.params.model_dump(mode="json", include=set(fields)),
            "seed": self.context.seed,
            "threads": self.context.threads,
            **more,
        }

    def _train_audio(self, utterances: list[Utterance]) -> None:
        from vpeval.data.fingerprint import file_hash
        from vpeval_multiutt.training import Episodes, train_aam

        p = self.params
        fresh = self.audio is None
        if fresh:
            self.audio = self._build_audio(self._audio_config())
        n = p.utterances_per_speaker
        episodes = Episodes(utterances, n, p.speakers_per_batch, p.batches_per_epoch)

        def train() -> None:
            train_aam(
                self.audio,
                lambda picks, rng: self.audio.training_embeddings(self.crops(utterances, picks, rng), n),
                episodes,
                p.embedding_dim,
                epochs=p.semi_epochs if self.continuing else p.epochs,
                lr=p.semi_lr if self.continuing else p.lr,
                stage=f"audio-{self.audio_aggregation}",
                validate=self._validator(self._validation[0], _audio_vector),
                **self._training_kwargs(later_stage=self.continuing),
            )

        if not fresh:  # semi-informed: continues from the lazy model, nothing to share
            return train()
        identity = self._shared_identity(
            AUDIO_RECIPE,
            aggregation=self.audio_aggregation,
            config=self.audio.config.to_json(),
            data=[(file_hash(u.path), u.channel, u.speaker) for u in utterances],
            validation=self._validation_identity(self._validation[0]),
        )
        if self._shared.load_or_train("audio", identity, self.audio, self.audio.state_dict, train, self.history):
            self.context.log.info("%s (%s): audio encoder reused from an identical training", self.name, self.system)

    def _train_text(self, utterances: list[Utterance]) -> None:
        from vpeval_multiutt.text_model import train_text

        p = self.params
        fresh = self.text is None
        if fresh:
            self.text = self._build_text()
        texts = self.texts(utterances, "transcribe training speech")
        speakers = [u.speaker for u in utterances]

        def train() -> None:
            train_text(
                self.text,
                texts,
                speakers,
                self._text_episode,
                batch_speakers=p.text_batch_speakers,
                epochs=p.semi_epochs if self.continuing else p.text_epochs,
                lr=min(p.text_lr, p.semi_lr) if self.continuing else p.text_lr,
                head_lr=p.semi_lr if self.continuing else p.text_head_lr,
                temperature=p.text_temperature,
                grad_clip=p.grad_clip,
                context=self.context,
                history=self.history,
                validate=self._validator(self._validation[0], _text_vector),
            )

        if not fresh:
            return train()
        identity = self._shared_identity(
            TEXT_RECIPE,
            episode=self._text_episode,
            data=[texts, speakers],
            validation=self._validation_identity(self._validation[0]),
        )
        if self._shared.load_or_train("text", identity, self.text, self.text.trainable_state, train, self.history):
            self.context.log.info(
                "%s (%s): authorship encoder reused from an identical training", self.name, self.system
            )

    def _fit_prosody_normalisation(self, utterances: list[Utterance]) -> None:
        if self.prosody_mean is not None:  # continuing: the fusion layers were trained on this scale
            return
        raw = self.prosody(utterances, standardise=False)
        self.prosody_mean = raw.mean(axis=0)
        self.prosody_std = np.where(raw.std(axis=0) > 1e-6, raw.std(axis=0), 1.0)

    def _train_fusion(self, utterances: list[Utterance]) -> None:
        from vpeval_multiutt.training import Episodes, train_aam

        p = self.params
        if self.fusion is None:
            self.fusion = self._build_fusion()
        self.audio.requires_grad_(False)
        if self.text is not None:
            self.text.requires_grad_(False)
        step = self.strategy.fusion_step(self, utterances)
        schedule = {**self._training_kwargs(later_stage=True), **self.strategy.fusion_schedule()}
        if self.continuing:
            schedule.update(epochs=p.semi_epochs, lr=p.semi_lr)
        train_aam(
            self.fusion,
            step,
            Episodes(utterances, p.utterances_per_speaker, p.speakers_per_batch, p.batches_per_epoch),
            p.embedding_dim,
            stage=f"fusion-{self.system}",
            validate=self._validator(self._validation[1], lambda a, side: a.strategy.side(a, side)),
            **schedule,
        )

    def _rjca_text(self, sides: list[list[str]]):
        """[S, N, text_dim] text vectors an rjca system fuses (RjcaSystem.text_sequence)."""
        return self.strategy.text_sequence(self, sides)

    # -- prosody ----------------------------------------------------------------------------

    def prosody(self, utterances: Sequence[Utterance], standardise: bool = True) -> np.ndarray:
        """[U, 3] prosodic vectors, cached by audio content and transcript settings."""
        from vpeval.content_cache import JsonCache, cache_key
        from vpeval.data.fingerprint import file_hash
        from vpeval_multiutt.prosody import utterance_prosody

        cache = JsonCache(self.context.folder("prosody"))
        out = []
        items = self.context.progress(utterances, total=len(utterances), description=f"{self.name}: prosody")
        for u in items:
            source = (
                "corpus:" + (u.transcript or "") if self.params.transcripts == "corpus" else self.transcriber.settings()
            )
            key = cache_key(file_hash(u.path), u.channel, PROSODY_VERSION, source)
            value = cache.get(key)
            if value is None:
                value = utterance_prosody(u.load(self.sample_rate), self.sample_rate, self.transcriber.get(u)).tolist()
                cache.put(key, value)
            out.append(value)
        raw = np.asarray(out, dtype=np.float32).reshape(len(utterances), 3)
        return (raw - self.prosody_mean) / self.prosody_std if standardise else raw

    def prosody_input(self, sides: np.ndarray) -> np.ndarray:
        """Standardised prosody of sides [S, N, 3] -> [S, 6] (mean and std over N) or [S*N, 3] per utterance."""
        from vpeval_multiutt.prosody import side_statistics

        if self.speaker_level:
            return np.stack([side_statistics(side) for side in sides]).astype(np.float32)
        return sides.reshape(-1, 3).astype(np.float32)

    # -- trials ---------------------------------------------------------------------------

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return self.represent_many([utterances])[0]

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        self.context.apply_threads()
        self._check_ready()
        require_utterances(sides, self.name)
        return self._represent_sides(sides, lambda a, side: a.strategy.side(a, side), "represent")

    def _represent_sides(self, sides: Sequence[Sequence[Utterance]], side_vector, what: str) -> np.ndarray:
        """[S, D] side_vector(self, side) of every side, with the networks in eval mode and no gradients;
        every distinct utterance's embedding or frame map is computed once (batched where batch_inference
        says so) and shared by the sides that hold it."""
        import torch

        for module in (self.audio, self.text, self.fusion):
            if module is not None:
                module.eval()
        self._utterance_memo = {}  # nested N-utterance sides share utterances: embed each once per call
        self._map_memo = MemoryCache(self.params.audio_cache_mb)  # likewise their frame maps, within a budget
        try:
            with torch.no_grad(), self.context.autocast():
                if self.uses_audio and self.batched:
                    self._prefetch([u for side in sides for u in side])
                items = self.context.progress(
                    sides, total=len(sides), description=f"{self.name} ({self.system}): {what}"
                )
                return np.stack([side_vector(self, list(side)) for side in items]).astype(np.float64)
        finally:
            self._utterance_memo = None
            self._map_memo = None

    @property
    def batched(self) -> bool:
        """Whether trial sides' utterances are embedded in padded batches (batch_inference)."""
        mode = self.params.batch_inference
        return mode == "always" or (mode == "auto" and self.context.on_gpu)

    def _prefetch(self, utterances: Sequence[Utterance]) -> None:
        """The ECAPA frame maps (or utterance embeddings) of these utterances, in length-bucketed padded
        batches, into this call's memos; equal to one utterance at a time (AudioModel.frame_map_padded)."""
        from vpeval_torch.batching import length_buckets, pad_batch

        p = self.params
        distinct = list({(u.path, u.channel): u for u in utterances}.values())
        maps = self.strategy.uses_frame_maps
        # Chunks of the distinct utterances: only one chunk's frames are held here at a time.
        chunk = max(p.inference_batch_size * 16, 1)
        for begin in range(0, len(distinct), chunk):
            group = distinct[begin : begin + chunk]
            frames = [self.frames.frames(u) for u in group]
            for bucket in length_buckets([len(f) for f in frames], p.inference_batch_size, p.inference_max_frames):
                x, lengths = pad_batch([frames[i] for i in bucket], self.device)
                frame_map = self.audio.encoder.frame_map_padded(x, lengths)
                vectors = None if maps else self.audio.encoder.pool_padded(frame_map, lengths)
                for row, i in enumerate(bucket):
                    key = (group[i].path, group[i].channel)
                    if maps:
                        one = frame_map[row : row + 1, :, : int(lengths[row])].clone()
                        self._map_memo.get(key, lambda one=one: one)
                    else:
                        self._utterance_memo[key] = vectors[row]

    def _frames_of(self, side: list[Utterance]):
        return [self.tensor(self.frames.frames(u)) for u in side]

    def frame_maps(self, side: list[Utterance]) -> list:
        """Each utterance's ECAPA frame map [1, C, T_i] (before pooling), once per represent_many call."""

        def make(u: Utterance):
            return self.audio.encoder.frame_map(self.tensor(self.frames.frames(u))[None])

        if self._map_memo is None:
            return [make(u) for u in side]
        return [self._map_memo.get((u.path, u.channel), lambda u=u: make(u)) for u in side]

    def audio_side(self, side: list[Utterance]):
        """The side's speaker-level audio vector [D] (the audio network's own aggregation)."""
        import torch

        if self.audio.aggregation == "frame-concat":  # AudioModel.side_embedding, with the maps memoised
            return self.audio.encoder.pool(torch.cat(self.frame_maps(side), dim=2))[0]
        return self.audio.side_embedding(self._frames_of(side))

    def audio_utterances(self, side: list[Utterance]):
        """[N, D] each utterance's embedding, once per represent_many call."""
        import torch

        memo = self._utterance_memo if self._utterance_memo is not None else {}
        for u in side:
            key = (u.path, u.channel)
            if key not in memo:
                memo[key] = self.audio.utterance_embeddings(self.tensor(self.frames.frames(u))[None])[0]
        return torch.stack([memo[(u.path, u.channel)] for u in side])

    def texts(self, utterances: Sequence[Utterance], what: str = "transcribe") -> list[str]:
        """The transcripts of these utterances (the transcriber's cache shows `what` as its progress)."""
        return [w.text for w in self.transcriber.get_many(utterances, f"{self.name}: {what}")]

    def _check_ready(self) -> None:
        missing = [
            name
            for name, ready in (("audio", self.audio), ("text", self.text))
            if getattr(self, f"uses_{name}") and ready is None
        ]
        if self.params.trains_fusion and self.fusion is None:
            missing.append("fusion")
        if missing:
            raise RuntimeError(
                f"attacker {self.name} has no trained {', '.join(missing)} model: call train() or load() first"
            )

    # -- cache ----------------------------------------------------------------------------

    def init_from(self, folder: Path) -> None:
        """Continue from another multiutt model of the same system and sizes (the experiment's `init_from:
        <label>`): the paper's semi-informed attackers start from the lazy-informed ones (IV-C)."""
        self._start_folder = Path(folder)

    def save(self, folder: Path) -> None:
        import torch

        from vpeval.device import cpu_state_dict

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        config: dict = {"system": self.system}
        if self.audio is not None:  # checkpoints hold CPU tensors: they load on any device
            torch.save(cpu_state_dict(self.audio), folder / WEIGHTS["audio"])
            config["audio"] = self.audio.config.to_json()
            if self.params.frame_source != "fbank":
                self.frames.save(folder / FRONTEND)
        if self.strategy.uses_cross_frames and self.params.cross_frames != "fbank":
            self.cross_frames.save(folder / CROSS_FRONTEND)
        if self.text is not None:
            torch.save(cpu_state_dict(self.text.trainable_state()), folder / WEIGHTS["text"])
        if self.fusion is not None:
            torch.save(cpu_state_dict(self.fusion), folder / WEIGHTS["fusion"])
        if self.prosody_mean is not None:
            config["prosody_mean"] = self.prosody_mean.tolist()
            config["prosody_std"] = self.prosody_std.tolist()
        (folder / CONFIG).write_text(json.dumps(config, indent=2))
        (folder / HISTORY).write_text(json.dumps([asdict(r) for r in self.history.epochs], indent=2))

    @classmethod
    def missing_paths(cls, params) -> list[str]:
        """The local text model folders (LUAR's checkpoint, its RoBERTa backbone) exist; the frame and ASR
        folders are checked by the frontend and asr plugins they name."""
        folders = {"text_model_path": params.text_model_path, "luar_backbone_path": params.luar_backbone_path}
        return [
            f"{field} {folder} is not a folder; give the local model folder or remove {field}."
            for field, folder in folders.items()
            if folder is not None and not Path(folder).is_dir()
        ]

    def training_curve(self) -> list[dict]:
        """Every stage's epochs (stage, epoch, loss, validation EER, the kept one selected) of the training
        this instance holds: after `train`, or after `load` from the folder's history.json."""
        keys = ("stage", "epoch", "loss", "validation_eer", "selected")
        return [{key: getattr(record, key) for key in keys} for record in self.history.epochs]

    def load(self, folder: Path) -> None:
        from vpeval_multiutt.audio_model import AudioConfig
        from vpeval_multiutt.training import EpochRecord, History

        self.context.apply_threads()
        folder = Path(folder)
        if not (folder / CONFIG).is_file():
            raise MissingModelError(
                f"{self.name}: {folder} has no {CONFIG}; give the folder a trained multiutt attacker saved."
            )
        config = json.loads((folder / CONFIG).read_text())
        history = folder / HISTORY  # folders saved before the history was kept have none: no curve
        records = json.loads(history.read_text()) if history.is_file() else []
        self.history = History([EpochRecord(**record) for record in records])
        if config.get("system") != self.system:
            raise ConfigError(
                f"{self.name}: the model in {folder} is system {config.get('system')!r}, but the parameters ask for "
                f"{self.system!r}; set the same system or train a new model."
            )
        if self.uses_audio:
            if self.params.frame_source != "fbank":
                self.frames.load(folder / FRONTEND)
            saved = AudioConfig.from_json(config["audio"])
            if saved != self._audio_config():
                raise ConfigError(
                    f"{self.name}: the audio network in {folder} is {saved}, but the parameters ask for "
                    f"{self._audio_config()}; set the same sizes and frame_source or train a new model."
                )
            self.audio = self._build_audio(saved)
            self._load_state(self.audio, folder / WEIGHTS["audio"])
        if self.strategy.uses_cross_frames and self.params.cross_frames != "fbank":
            self.cross_frames.load(folder / CROSS_FRONTEND)
        if self.uses_text:
            self.text = self._build_text()
            self._load_state(self.text, folder / WEIGHTS["text"], strict=self.params.text_finetune)
        if self.uses_prosody:
            self.prosody_mean = np.asarray(config["prosody_mean"], dtype=np.float32)
            self.prosody_std = np.asarray(config["prosody_std"], dtype=np.float32)
        if self.params.trains_fusion:
            self.fusion = self._build_fusion()
            self._load_state(self.fusion, folder / WEIGHTS["fusion"])

    def _load_state(self, module, path: Path, strict: bool = True) -> None:
        from vpeval.torchload import load_weights_only

        if not path.is_file():
            raise MissingModelError(
                f"{self.name}: {path} is missing; the saved model folder is incomplete, train again."
            )
        state = load_weights_only(path, map_location="cpu")  # copied into the module on the run's device
        missing, unexpected = module.load_state_dict(state, strict=strict)
        if unexpected or (not strict and any(k.startswith("head.") for k in missing)):
            raise ConfigError(f"{self.name}: {path} does not match the network the parameters build; train again.")
        module.eval()


def file_digest(u: Utterance) -> str:
    from vpeval.data.fingerprint import file_hash

    return file_hash(u.path)


def _audio_vector(attacker: MultiUttAttacker, side: list[Utterance]) -> np.ndarray:
    """A side through the audio network's own aggregation (the encoder stage's validation)."""
    if attacker.audio.aggregation == "frame-concat":
        return to_numpy(attacker.audio_side(side))
    return to_numpy(attacker.audio.aggregate(attacker.audio_utterances(side)))


def _text_vector(attacker: MultiUttAttacker, side: list[Utterance]) -> np.ndarray:
    """A side through the authorship encoder alone (the text stage's validation): its episode of N
    transcripts, or the mean of its per-transcript unit vectors for per-utterance text."""
    import torch

    texts = attacker.texts(side)
    if attacker.speaker_level:
        return to_numpy(attacker.text([texts])[0])
    return to_numpy(torch.nn.functional.normalize(attacker.text([[t] for t in texts]).float(), dim=-1).mean(0))
