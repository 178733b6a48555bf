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
from vpeval.types import Corpus, TrainingData, Utterance

from vpeval_multiutt.memory_cache import MemoryCache
from vpeval_multiutt.params import AUDIO_SYSTEMS, MultiUttParams

CONFIG = "config.json"
HISTORY = "history.json"
WEIGHTS = {"audio": "audio.pt", "text": "text.pt", "fusion": "fusion.pt"}
FRONTEND = "frontend"
CROSS_FRONTEND = "cross-frontend"
PROSODY_VERSION = "f0mean-rate-voiced-1"
# The parameters that decide a from-scratch encoder's weights (with its config, data, seed and code).
AUDIO_RECIPE = ("frame_source", "frame_source_params", "n_mels", "attention_heads", "query_temperature",
                "utterances_per_speaker", "speakers_per_batch", "crop_seconds", "epochs", "batches_per_epoch",
                "margin", "scale", "lr", "weight_decay", "grad_clip", "lr_step", "lr_gamma")
TEXT_RECIPE = ("text_model_path", "text_dim", "text_max_tokens", "text_temperature", "text_lr", "text_head_lr",
               "text_batch_speakers", "text_epochs", "text_finetune", "attention_heads", "grad_clip")


class MultiUttAttacker(Attacker):
    """Multi-utterance, multimodal speaker verification attacker (seed 000): audio, text and prosody over N utterances.

    Systems: mean, query-attention, frame-concat, text, audio-text, audio-prosody, hybrid, rjca, rjca-global-text,
    ssl-whisper.
    """

    name: ClassVar[str] = "multiutt"
    sample_rate: ClassVar[int] = 16000
    needs_training: ClassVar[bool] = True
    Params: ClassVar[type[MultiUttParams]] = MultiUttParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        from vpeval_multiutt.training import History

        self.audio = None  # AudioModel
        self.text = None  # TextModel
        self.fusion = None  # ConcatFusion or ProsodyFusion
        self.prosody_mean: np.ndarray | None = None
        self.prosody_std: np.ndarray | None = None
        self.history = History()
        self._frames = None
        self._cross_frames = None
        self._transcriber = None
        self._start_folder: Path | None = None
        self._utterance_memo: dict | None = None
        self._map_memo = None  # MemoryCache of ECAPA frame maps during one represent_many call

    # -- what the system is made of ---------------------------------------------------------

    @property
    def system(self) -> str:
        return self.params.system

    @property
    def uses_audio(self) -> bool:
        return self.system != "text"

    @property
    def uses_text(self) -> bool:
        return self.system in ("text", "audio-text", "hybrid", "rjca", "rjca-global-text")

    @property
    def uses_prosody(self) -> bool:
        return self.system == "audio-prosody"

    @property
    def speaker_level(self) -> bool:
        """Whether text or prosody is summarised over the N utterances, or read per utterance."""
        if self.system in ("hybrid", "rjca"):
            return False
        if self.system in ("audio-text", "audio-prosody"):
            return self.params.fusion_level == "frame"
        return True

    @property
    def audio_aggregation(self) -> str:
        """The aggregation the audio network trains with; per-utterance fusions use single-utterance ECAPA."""
        if self.system in AUDIO_SYSTEMS:
            return self.system
        if self.system == "ssl-whisper" or (
            self.system in ("audio-text", "audio-prosody") and self.params.fusion_level == "frame"
        ):
            return "frame-concat"
        return "mean"

    @property
    def frames(self):
        if self._frames is None:
            from vpeval_multiutt.frames import make_frame_source

            p = self.params
            self._frames = make_frame_source(p.frame_source, p.frame_source_params, p.n_mels, p.audio_cache_mb, self.context)
        return self._frames

    @property
    def cross_frames(self):
        """ssl-whisper's second frame source (Whisper frames), keys and values of its cross-attention."""
        if self._cross_frames is None:
            from vpeval_multiutt.frames import make_frame_source

            p = self.params
            self._cross_frames = make_frame_source(p.cross_frames, p.cross_frames_params, p.n_mels, p.audio_cache_mb,
                                                   self.context)
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
            return AudioModel(config, self.audio_aggregation, self.params.attention_heads, self.params.query_temperature)

    def _build_text(self):
        import torch

        from vpeval_multiutt.text_model import TextModel, resolve_text_model

        p = self.params
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.context.torch_seed(self.name, "text", self._text_episode))
            return TextModel(resolve_text_model(p.text_model_path), p.text_max_tokens, p.attention_heads, p.text_dim,
                             p.text_finetune)

    def _build_fusion(self):
        import torch

        from vpeval_multiutt.fusion import ConcatFusion, ProsodyFusion
        from vpeval_multiutt.hybrid import HybridFusion
        from vpeval_multiutt.rjca import Rjca
        from vpeval_multiutt.ssl_whisper import SslWhisper

        p = self.params
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.context.torch_seed(self.name, self.system, "fusion"))
            if self.system == "hybrid":
                return HybridFusion(self.text.sentence.dim, p.channels[-1], p.text_dim, p.hybrid_attention_dim,
                                    p.attention_heads, p.hybrid_dim, p.embedding_dim)
            if self.system == "ssl-whisper":
                return SslWhisper(p.channels[-1], self.cross_frames.dim, p.ssl_whisper_dim, p.attention_heads,
                                  p.max_utterances, p.attention_channels, p.embedding_dim)
            if self.system.startswith("rjca"):
                return Rjca(p.embedding_dim, p.text_dim, p.rjca_dim, p.rjca_recurrent_layers, p.rjca_fusion_layers,
                            p.attention_heads, p.rjca_dropout, p.embedding_dim, global_text=self.speaker_level)
            if self.system == "audio-text":
                return ConcatFusion(p.embedding_dim, p.text_dim, p.fusion_dim, p.embedding_dim)
            return ProsodyFusion(p.embedding_dim, 6 if self.speaker_level else 3, p.prosody_dim, p.embedding_dim)

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
        if self._start_folder is not None:
            # Semi-informed (IV-C): start from the lazy model and train every part further.
            self.load(self._start_folder)
            for module in (self.audio, self.text, self.fusion):
                if module is not None:
                    module.requires_grad_(True)
            if self.text is not None:
                self.text.sentence.requires_grad_(self.params.text_finetune)
            self.context.log.info("%s: continuing from %s", self.name, self._start_folder)
        self.context.log.info("%s (%s): scenario %s, stages %s", self.name, self.system, data.scenario,
                              [s.name for s in data.stages])
        if self.uses_audio:
            self.frames.fit(corpus)
            self._train_audio(base)
        if self.uses_text:
            if self.params.transcripts == "corpus" and data.scenario != "original":
                self.context.log.warning(
                    "%s: transcripts: corpus reads the reference text of anonymized speech, which an attacker "
                    "would not have; set transcripts: asr to read what the anonymized audio says", self.name)
            self._train_text(base)
        if self.uses_prosody:
            self._fit_prosody_normalisation(base)
        if self.system == "ssl-whisper":
            self.cross_frames.fit(corpus)
        if self.params.trains_fusion:
            self._train_fusion(fusion)

    def _split_speakers(self, corpus: Corpus) -> tuple[list[Utterance], list[Utterance]]:
        """(encoder-training, fusion-training) utterances; the same list when base_share is 1."""
        utterances = list(corpus.utterances)
        if self.params.base_share >= 1.0:
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

    def _crops(self, utterances: Sequence[Utterance], picks: np.ndarray, rng: np.random.Generator):
        import torch

        from vpeval_multiutt.frames import random_crop

        length = max(1, int(round(self.params.crop_seconds * self.frames.frame_rate)))
        return torch.from_numpy(np.stack([random_crop(self.frames.frames(utterances[k]), length, rng) for k in picks.ravel()]))

    def _training_kwargs(self) -> dict:
        p = self.params
        return dict(weight_decay=p.weight_decay, grad_clip=p.grad_clip, lr_step=p.lr_step, lr_gamma=p.lr_gamma,
                    margin=p.margin, scale=p.scale, context=self.context, history=self.history)

    @property
    def _text_episode(self) -> int:
        """Transcripts per side the authorship encoder trains on: N, or 1 for per-utterance text."""
        return self.params.utterances_per_speaker if self.speaker_level else 1

    @property
    def _shared(self):
        """Encoders shared across systems (shared.py): in the run's cache when there is one."""
        from vpeval_multiutt.shared import SharedEncoders

        root = self.context.options.get("cache_root")
        return SharedEncoders(Path(root) / "work" / f"{self.name}-encoders" if root else self.context.folder("encoders"))

    def _shared_identity(self, fields: tuple[str, ...], **more) -> dict:
        """What decides a from-scratch encoder's weights besides its code: these parameters, seed, threads."""
        return {**self.params.model_dump(mode="json", include=set(fields)), "seed": self.context.seed,
                "threads": self.context.threads, **more}

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
                lambda picks, rng: self.audio.training_embeddings(self._crops(utterances, picks, rng), n),
                episodes, p.embedding_dim, epochs=p.epochs, lr=p.lr, stage=f"audio-{self.audio_aggregation}",
                **self._training_kwargs(),
            )

        if not fresh:  # semi-informed: continues from the lazy model, nothing to share
            return train()
        identity = self._shared_identity(
            AUDIO_RECIPE, aggregation=self.audio_aggregation, config=self.audio.config.to_json(),
            data=[(file_hash(u.path), u.channel, u.speaker) for u in utterances],
        )
        if self._shared.load_or_train("audio", identity, self.audio, self.audio.state_dict, train, self.history):
            self.context.log.info("%s (%s): audio encoder reused from an identical training", self.name, self.system)

    def _train_text(self, utterances: list[Utterance]) -> None:
        from vpeval_multiutt.text_model import train_text

        p = self.params
        fresh = self.text is None
        if fresh:
            self.text = self._build_text()
        texts = [w.text for w in self.transcriber.get_many(utterances, f"{self.name}: transcribe training speech")]
        speakers = [u.speaker for u in utterances]

        def train() -> None:
            train_text(
                self.text, texts, speakers, self._text_episode,
                batch_speakers=p.text_batch_speakers, epochs=p.text_epochs, lr=p.text_lr, head_lr=p.text_head_lr,
                temperature=p.text_temperature, grad_clip=p.grad_clip, context=self.context, history=self.history,
            )

        if not fresh:
            return train()
        identity = self._shared_identity(TEXT_RECIPE, episode=self._text_episode, data=[texts, speakers])
        if self._shared.load_or_train("text", identity, self.text, self.text.trainable_state, train, self.history):
            self.context.log.info("%s (%s): authorship encoder reused from an identical training", self.name, self.system)

    def _fit_prosody_normalisation(self, utterances: list[Utterance]) -> None:
        if self.prosody_mean is not None:  # continuing: the fusion layers were trained on this scale
            return
        raw = self._prosody(utterances, standardise=False)
        self.prosody_mean = raw.mean(axis=0)
        self.prosody_std = np.where(raw.std(axis=0) > 1e-6, raw.std(axis=0), 1.0)

    def _train_fusion(self, utterances: list[Utterance]) -> None:
        import torch

        from vpeval_multiutt.ssl_whisper import training_positions
        from vpeval_multiutt.training import Episodes, train_aam

        p = self.params
        if self.fusion is None:
            self.fusion = self._build_fusion()
        self.audio.requires_grad_(False)
        if self.text is not None:
            self.text.requires_grad_(False)
            texts = [w.text for w in self.transcriber.get_many(utterances, f"{self.name}: transcribe fusion speech")]
        if self.uses_prosody:
            prosody = self._prosody(utterances)
        n = p.utterances_per_speaker

        def embed(picks: np.ndarray, rng: np.random.Generator):
            self.audio.eval()
            if self.system == "hybrid":
                self.text.eval()
                with torch.no_grad():
                    inputs = self._hybrid_inputs(list(self.audio.encoder.frame_map(self._crops(utterances, picks, rng))),
                                                 [texts[k] for k in picks.ravel()])
                return self.fusion(*inputs), n
            if self.system == "ssl-whisper":
                with torch.no_grad():
                    frames, whisper = self._aligned_crops(utterances, picks, rng)
                    maps = self.audio.encoder.frame_map(frames).transpose(1, 2)  # [S*N, T, C]
                s, t, tw = len(picks), maps.shape[1], whisper.shape[1]
                positions = training_positions(n, p.max_utterances, rng)
                return self.fusion(maps.reshape(s, n * t, -1), positions.repeat_interleave(t),
                                   whisper.reshape(s, n * tw, -1), positions.repeat_interleave(tw)), 1
            if self.system.startswith("rjca"):
                self.text.eval()
                with torch.no_grad():
                    audio, _ = self.audio.training_embeddings(self._crops(utterances, picks, rng), n)
                    text = self._rjca_text([[texts[k] for k in row] for row in picks])
                return self.fusion(audio.view(len(picks), n, -1), text), 1
            with torch.no_grad():
                audio, rows = self.audio.training_embeddings(self._crops(utterances, picks, rng), n)
                if self.text is not None:
                    self.text.eval()
                    sides = [[texts[k] for k in row] for row in picks]
                    other = self.text(sides) if self.speaker_level else self.text([[t] for s in sides for t in s])
                else:
                    other = torch.from_numpy(self._prosody_input(prosody[picks]))
            return self.fusion(audio, other), rows

        schedule = dict(epochs=p.fusion_epochs, lr=p.fusion_lr, **self._training_kwargs())
        if self.system == "hybrid":
            schedule.update(epochs=p.hybrid_epochs, lr=p.hybrid_lr, weight_decay=p.hybrid_weight_decay)
        train_aam(self.fusion, embed, Episodes(utterances, n, p.speakers_per_batch, p.batches_per_epoch),
                  p.embedding_dim, stage=f"fusion-{self.system}", **schedule)

    def _aligned_crops(self, utterances: Sequence[Utterance], picks: np.ndarray, rng: np.random.Generator):
        """Crops of the ECAPA frames and of the Whisper frames over the same stretch of each utterance."""
        import torch

        from vpeval_multiutt.frames import crop_at, crop_start

        seconds, rate, cross_rate = self.params.crop_seconds, self.frames.frame_rate, self.cross_frames.frame_rate
        length, cross_length = max(1, round(seconds * rate)), max(1, round(seconds * cross_rate))
        ecapa, whisper = [], []
        for k in picks.ravel():
            frames = self.frames.frames(utterances[k])
            start = crop_start(len(frames), length, rng)
            ecapa.append(crop_at(frames, start, length))
            whisper.append(crop_at(self.cross_frames.frames(utterances[k]), round(start * cross_rate / rate), cross_length))
        return torch.from_numpy(np.stack(ecapa)), torch.from_numpy(np.stack(whisper))

    def _rjca_text(self, sides: list[list[str]]):
        """[S, N, text_dim]: each utterance's vector, or the side's speaker-level vector repeated (III-B5)."""
        n = len(sides[0])
        if self.speaker_level:
            return self.text(sides).unsqueeze(1).expand(-1, n, -1)
        return self.text([[t] for side in sides for t in side]).view(len(sides), n, -1)

    def _hybrid_inputs(self, frame_maps: list, texts: list[str]) -> tuple:
        """What HybridFusion reads for utterances with these frame maps ([C, T] each, equal T) and transcripts."""
        import torch

        tokens, padding, real = self.text.sentence.tokens(texts)
        return tokens, padding, real, torch.stack(frame_maps), self.text([[t] for t in texts])

    # -- prosody ----------------------------------------------------------------------------

    def _prosody(self, utterances: Sequence[Utterance], standardise: bool = True) -> np.ndarray:
        """[U, 3] prosodic vectors, cached by audio content and transcript settings."""
        from vpeval.content_cache import JsonCache, cache_key
        from vpeval.data.fingerprint import file_hash
        from vpeval_multiutt.prosody import utterance_prosody

        cache = JsonCache(self.context.folder("prosody"))
        out = []
        items = self.context.progress(utterances, total=len(utterances), description=f"{self.name}: prosody")
        for u in items:
            source = "corpus:" + (u.transcript or "") if self.params.transcripts == "corpus" else self.transcriber.settings()
            key = cache_key(file_hash(u.path), u.channel, PROSODY_VERSION, source)
            value = cache.get(key)
            if value is None:
                value = utterance_prosody(u.load(self.sample_rate), self.sample_rate, self.transcriber.get(u)).tolist()
                cache.put(key, value)
            out.append(value)
        raw = np.asarray(out, dtype=np.float32).reshape(len(utterances), 3)
        return (raw - self.prosody_mean) / self.prosody_std if standardise else raw

    def _prosody_input(self, sides: np.ndarray) -> np.ndarray:
        """Standardised prosody of sides [S, N, 3] -> [S, 6] (mean and std over N) or [S*N, 3] per utterance."""
        from vpeval_multiutt.prosody import side_statistics

        if self.speaker_level:
            return np.stack([side_statistics(side) for side in sides]).astype(np.float32)
        return sides.reshape(-1, 3).astype(np.float32)

    # -- trials ---------------------------------------------------------------------------

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return self.represent_many([utterances])[0]

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        import torch

        self.context.apply_threads()
        self._check_ready()
        for side in sides:
            if len(side) == 0:
                raise DataError(f"A trial side given to the {self.name} attacker has no utterances; check the trial list.")
        items = self.context.progress(sides, total=len(sides), description=f"{self.name} ({self.system}): represent")
        self._utterance_memo = {}  # nested N-utterance sides share utterances: embed each once per call
        self._map_memo = MemoryCache(self.params.audio_cache_mb)  # likewise their frame maps, within a budget
        try:
            with torch.no_grad():
                return np.stack([self._side(list(side)) for side in items]).astype(np.float64)
        finally:
            self._utterance_memo = None
            self._map_memo = None

    def _side(self, side: list[Utterance]) -> np.ndarray:
        import torch

        from vpeval_multiutt.fusion import weighted_vector

        if self.system in AUDIO_SYSTEMS:
            if self.system == "frame-concat":
                return self._audio_side(side).numpy()
            return self.audio.aggregate(self._audio_utterances(side)).numpy()
        if self.system == "text":
            return self.text([self._texts(side)])[0].numpy()
        if self.system == "audio-text" and self.params.fusion == "weighted":
            texts = self._texts(side)
            if self.speaker_level:
                return weighted_vector(self._audio_side(side).numpy(), self.text([texts])[0].numpy(), self.params.fusion_weights)
            audio = self._audio_utterances(side).numpy()
            text = self.text([[t] for t in texts]).numpy()
            return np.mean([weighted_vector(a, t, self.params.fusion_weights) for a, t in zip(audio, text)], axis=0)
        if self.system == "audio-text":
            texts = self._texts(side)
            if self.speaker_level:
                return self.fusion(self._audio_side(side)[None], self.text([texts]))[0].numpy()
            fused = self.fusion(self._audio_utterances(side), self.text([[t] for t in texts]))
            return torch.nn.functional.normalize(fused, dim=-1).mean(dim=0).numpy()
        if self.system == "ssl-whisper":
            if len(side) > self.params.max_utterances:
                raise DataError(
                    f"{self.name}: a trial side has {len(side)} utterances but ssl-whisper learned positions for "
                    f"{self.params.max_utterances}; raise max_utterances and train again, or use smaller N."
                )
            maps = [m[0].T for m in self._frame_maps(side)]
            whisper = [torch.from_numpy(self.cross_frames.frames(u)) for u in side]
            index = lambda parts: torch.cat([torch.full((len(x),), i) for i, x in enumerate(parts)])  # noqa: E731
            return self.fusion(torch.cat(maps)[None], index(maps), torch.cat(whisper)[None], index(whisper))[0].numpy()
        if self.system.startswith("rjca"):
            return self.fusion(self._audio_utterances(side)[None], self._rjca_text([self._texts(side)]))[0].numpy()
        if self.system == "hybrid":
            texts = self._texts(side)
            fused = torch.cat([
                self.fusion(*self._hybrid_inputs([m[0]], [t]))
                for m, t in zip(self._frame_maps(side), texts)
            ])
            return torch.nn.functional.normalize(fused, dim=-1).mean(dim=0).numpy()
        prosody = torch.from_numpy(self._prosody_input(self._prosody(side)[None]))
        if self.speaker_level:
            return self.fusion(self._audio_side(side)[None], prosody)[0].numpy()
        fused = self.fusion(self._audio_utterances(side), prosody)
        return torch.nn.functional.normalize(fused, dim=-1).mean(dim=0).numpy()

    def _frames_of(self, side: list[Utterance]):
        import torch

        return [torch.from_numpy(self.frames.frames(u)) for u in side]

    def _frame_maps(self, side: list[Utterance]) -> list:
        """Each utterance's ECAPA frame map [1, C, T_i] (before pooling), once per represent_many call."""
        import torch

        def make(u: Utterance):
            return self.audio.encoder.frame_map(torch.from_numpy(self.frames.frames(u))[None])

        if self._map_memo is None:
            return [make(u) for u in side]
        return [self._map_memo.get((u.path, u.channel), lambda u=u: make(u)) for u in side]

    def _audio_side(self, side: list[Utterance]):
        import torch

        if self.audio.aggregation == "frame-concat":  # AudioModel.side_embedding, with the maps memoised
            return self.audio.encoder.pool(torch.cat(self._frame_maps(side), dim=2))[0]
        return self.audio.side_embedding(self._frames_of(side))

    def _audio_utterances(self, side: list[Utterance]):
        import torch

        memo = self._utterance_memo if self._utterance_memo is not None else {}
        for u in side:
            key = (u.path, u.channel)
            if key not in memo:
                memo[key] = self.audio.utterance_embeddings(torch.from_numpy(self.frames.frames(u))[None])[0]
        return torch.stack([memo[(u.path, u.channel)] for u in side])

    def _texts(self, side: list[Utterance]) -> list[str]:
        return [w.text for w in self.transcriber.get_many(side, f"{self.name}: transcribe")]

    def _check_ready(self) -> None:
        missing = [name for name, ready in (("audio", self.audio), ("text", self.text)) if
                   getattr(self, f"uses_{name}") and ready is None]
        if self.params.trains_fusion and self.fusion is None:
            missing.append("fusion")
        if missing:
            raise RuntimeError(f"attacker {self.name} has no trained {', '.join(missing)} model: call train() or load() first")

    # -- cache ----------------------------------------------------------------------------

    def init_from(self, folder: Path) -> None:
        """Continue from another multiutt model of the same system and sizes (the experiment's `init_from:
        <label>`): the paper's semi-informed attackers start from the lazy-informed ones (IV-C)."""
        self._start_folder = Path(folder)

    def save(self, folder: Path) -> None:
        import torch

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        config: dict = {"system": self.system}
        if self.audio is not None:
            torch.save(self.audio.state_dict(), folder / WEIGHTS["audio"])
            config["audio"] = self.audio.config.to_json()
            if self.params.frame_source != "fbank":
                self.frames.save(folder / FRONTEND)
        if self.system == "ssl-whisper" and self.params.cross_frames != "fbank":
            self.cross_frames.save(folder / CROSS_FRONTEND)
        if self.text is not None:
            torch.save(self.text.trainable_state(), folder / WEIGHTS["text"])
        if self.fusion is not None:
            torch.save(self.fusion.state_dict(), folder / WEIGHTS["fusion"])
        if self.prosody_mean is not None:
            config["prosody_mean"] = self.prosody_mean.tolist()
            config["prosody_std"] = self.prosody_std.tolist()
        (folder / CONFIG).write_text(json.dumps(config, indent=2))
        (folder / HISTORY).write_text(json.dumps([asdict(r) for r in self.history.epochs], indent=2))

    def load(self, folder: Path) -> None:
        from vpeval_multiutt.audio_model import AudioConfig

        self.context.apply_threads()
        folder = Path(folder)
        if not (folder / CONFIG).is_file():
            raise MissingModelError(f"{self.name}: {folder} has no {CONFIG}; give the folder a trained multiutt attacker saved.")
        config = json.loads((folder / CONFIG).read_text())
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
        if self.system == "ssl-whisper" and self.params.cross_frames != "fbank":
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
        import torch

        if not path.is_file():
            raise MissingModelError(f"{self.name}: {path} is missing; the saved model folder is incomplete, train again.")
        state = torch.load(path, map_location="cpu", weights_only=True)
        missing, unexpected = module.load_state_dict(state, strict=strict)
        if unexpected or (not strict and any(k.startswith("head.") for k in missing)):
            raise ConfigError(f"{self.name}: {path} does not match the network the parameters build; train again.")
        module.eval()
