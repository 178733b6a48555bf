"""One strategy class per multiutt system: what it trains, how it fuses, how it represents a trial side.

The attacker (attacker.py) runs the steps every system shares (frames, encoder training and sharing,
checkpoints) and asks its strategy, chosen once from the params by `system_for`, for the rest:

- which parts it uses (`uses_audio`, `uses_text`, `uses_prosody`, `uses_cross_frames`);
- `audio_aggregation`, the aggregation its audio network trains with, and `speaker_level`, whether text or
  prosody is summarised over the N utterances or read per utterance;
- `build_fusion`, `fusion_schedule` and `fusion_step`: the fusion layers and how they train on the frozen
  encoders (the paper's two-stage training; only systems whose params.trains_fusion is true);
- `side`: one speaker vector for a trial side of N utterances.

Hooks read the attacker's public parts, named by parts.AttackerParts: params, frames, cross_frames, audio, text,
fusion and its helpers texts, frame_maps, audio_side, audio_utterances, crops, prosody and prosody_input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from vpeval.errors import DataError
from vpeval.types import Utterance
from vpeval_multiutt.params import MultiUttParams
from vpeval_multiutt.parts import AttackerParts, to_numpy

if TYPE_CHECKING:
    import torch


# picks [S, N] of utterance indices and the epoch's generator -> (embeddings, rows per speaker), as train_aam reads
FusionStep = Callable[[np.ndarray, np.random.Generator], tuple["torch.Tensor", int]]


class System:
    """The hooks of one system, with the defaults most systems share."""

    name: ClassVar[str]
    uses_audio: ClassVar[bool] = True
    uses_text: ClassVar[bool] = False
    uses_prosody: ClassVar[bool] = False
    uses_cross_frames: ClassVar[bool] = False  # a second frame source (ssl-whisper's Whisper frames)

    def __init__(self, params: MultiUttParams):
        self.params = params

    @classmethod
    def for_params(cls, params: MultiUttParams) -> System:
        return cls(params)

    @property
    def speaker_level(self) -> bool:
        """Whether text or prosody is summarised over the N utterances (True), or read per utterance."""
        return True

    @property
    def audio_aggregation(self) -> str:
        """The aggregation the audio network trains with; per-utterance fusions use single-utterance ECAPA."""
        return "mean"

    @property
    def uses_frame_maps(self) -> bool:
        """Whether a side reads its utterances' ECAPA frame maps (else their utterance embeddings): what
        batched inference precomputes."""
        return self.audio_aggregation == "frame-concat"

    def build_fusion(self, attacker: AttackerParts):
        """The fusion layers (the attacker seeds torch first)."""
        raise NotImplementedError(f"system {self.name} has no fusion layers")

    def fusion_schedule(self) -> dict:
        """train_aam's epochs and optimiser settings for the fusion layers, over the attacker's defaults."""
        return {"epochs": self.params.fusion_epochs, "lr": self.params.fusion_lr}

    def fusion_step(self, attacker: AttackerParts, utterances: list[Utterance]) -> FusionStep:
        """What one fusion training batch computes on the frozen encoders, for these training utterances."""
        raise NotImplementedError(f"system {self.name} has no fusion layers")

    def side(self, attacker: AttackerParts, side: list[Utterance]) -> np.ndarray:
        """One speaker vector for a trial side (called under torch.no_grad)."""
        raise NotImplementedError


def _side_mean(attacker, fused) -> np.ndarray:
    """Per-utterance fused vectors [N, D] -> their mean (mean pooling, Table IV), or the mean of their unit
    vectors (mean_pooling: unit-embeddings)."""
    from vpeval_multiutt.audio_model import side_mean

    return to_numpy(side_mean(fused.float(), attacker.params.mean_pooling == "unit-embeddings"))


def _transcripts(attacker: AttackerParts, utterances: list[Utterance]) -> list[str]:
    return attacker.texts(utterances, "transcribe fusion speech")


# -- audio only -------------------------------------------------------------------------------------


class MeanSystem(System):
    """mean: the mean of the N utterance embeddings (IV-B baseline)."""

    name = "mean"

    @property
    def audio_aggregation(self) -> str:
        return self.name

    def side(self, attacker, side):
        return to_numpy(attacker.audio.aggregate(attacker.audio_utterances(side)))


class QueryAttentionSystem(MeanSystem):
    """query-attention, end to end: ECAPA and the learnable query over the N utterance embeddings trained
    together (III-A1; aggregation_training: end-to-end)."""

    name = "query-attention"

    @classmethod
    def for_params(cls, params):
        return TwoStageQueryAttentionSystem(params) if params.aggregation_training == "two-stage" else cls(params)


class TwoStageQueryAttentionSystem(QueryAttentionSystem):
    """query-attention, two-stage (IV-C, the default): the single-utterance ECAPA (the mean system's encoder,
    trained on the base speakers) frozen, the query trained on its embeddings of the fusion speakers."""

    @property
    def audio_aggregation(self) -> str:
        return "mean"

    def build_fusion(self, attacker):
        from vpeval_multiutt.audio_model import QueryAttention

        p = self.params
        return QueryAttention(p.embedding_dim, p.attention_heads, p.query_temperature)

    def fusion_step(self, attacker, utterances):
        import torch

        n = self.params.utterances_per_speaker

        def step(picks, rng):
            attacker.audio.eval()
            with torch.no_grad():
                embeddings = attacker.audio.utterance_embeddings(attacker.crops(utterances, picks, rng))
            return attacker.fusion(embeddings.view(len(picks), n, -1)), 1

        return step

    def side(self, attacker, side):
        return to_numpy(attacker.fusion(attacker.audio_utterances(side)[None])[0])


class FrameConcatSystem(MeanSystem):
    """frame-concat: the N frame sequences concatenated before attentive statistics pooling (III-B1)."""

    name = "frame-concat"

    def side(self, attacker, side):
        return to_numpy(attacker.audio_side(side))


# -- text only --------------------------------------------------------------------------------------


class TextSystem(System):
    """text: the authorship encoder over the N transcripts (IV-B, LUAR-like)."""

    name = "text"
    uses_audio = False
    uses_text = True

    def side(self, attacker, side):
        return to_numpy(attacker.text([attacker.texts(side)])[0])


# -- audio fused with text or prosody, at frame (speaker) or utterance level ----------------------------


class _LevelledFusion(System):
    """fusion_level frame: speaker-level audio vector (frame-concat) with a speaker-level summary (III-B2,
    III-B3); utterance: single-utterance ECAPA fused per utterance, then the mean over the N (III-A2, III-A3)."""

    @property
    def speaker_level(self) -> bool:
        return self.params.fusion_level == "frame"

    @property
    def audio_aggregation(self) -> str:
        return "frame-concat" if self.speaker_level else "mean"


class AudioTextSystem(_LevelledFusion):
    """audio-text, fusion concat: each modality projected and normalised, concatenated, projected (III-A2)."""

    name = "audio-text"
    uses_text = True

    @classmethod
    def for_params(cls, params):
        return {"weighted": WeightedAudioTextSystem, "weighted-score": WeightedScoreAudioTextSystem}.get(
            params.fusion, cls
        )(params)

    def build_fusion(self, attacker):
        from vpeval_multiutt.fusion import ConcatFusion

        p = self.params
        return ConcatFusion(p.embedding_dim, p.text_dim, p.fusion_dim, p.embedding_dim)

    def fusion_step(self, attacker, utterances):
        import torch

        texts = _transcripts(attacker, utterances)
        n = self.params.utterances_per_speaker

        def step(picks, rng):
            attacker.audio.eval()
            with torch.no_grad():
                audio, rows = attacker.audio.training_embeddings(attacker.crops(utterances, picks, rng), n)
                attacker.text.eval()
                sides = [[texts[k] for k in row] for row in picks]
                text = attacker.text(sides) if self.speaker_level else attacker.text([[t] for s in sides for t in s])
            return attacker.fusion(audio, text), rows

        return step

    def side(self, attacker, side):
        texts = attacker.texts(side)
        if self.speaker_level:
            return to_numpy(attacker.fusion(attacker.audio_side(side)[None], attacker.text([texts]))[0])
        return _side_mean(
            attacker, attacker.fusion(attacker.audio_utterances(side), attacker.text([[t] for t in texts]))
        )


class WeightedAudioTextSystem(AudioTextSystem):
    """audio-text, fusion weighted: the audio and text embeddings weighted (0.5/0.5, 0.2/0.8) before the concat
    fusion layer, trained two-stage like it (III-B2)."""

    def build_fusion(self, attacker):
        from vpeval_multiutt.fusion import WeightedConcatFusion

        p = self.params
        return WeightedConcatFusion(p.embedding_dim, p.text_dim, p.fusion_dim, p.embedding_dim, p.fusion_weights)


class WeightedScoreAudioTextSystem(_LevelledFusion):
    """audio-text, fusion weighted-score (not the paper's): fixed weights on the cosine scores of the two
    modalities; no fusion layers."""

    name = "audio-text"
    uses_text = True

    def side(self, attacker, side):
        from vpeval_multiutt.fusion import weighted_vector

        weights = self.params.fusion_weights
        texts = attacker.texts(side)
        if self.speaker_level:
            return weighted_vector(to_numpy(attacker.audio_side(side)), to_numpy(attacker.text([texts])[0]), weights)
        audio = to_numpy(attacker.audio_utterances(side))
        text = to_numpy(attacker.text([[t] for t in texts]))
        return np.mean([weighted_vector(a, t, weights) for a, t in zip(audio, text)], axis=0)


class AudioProsodySystem(_LevelledFusion):
    """audio-prosody: the audio vector fused with the standardised prosodic vector (III-A3, III-B3)."""

    name = "audio-prosody"
    uses_prosody = True

    def build_fusion(self, attacker):
        from vpeval_multiutt.fusion import ProsodyFusion

        p = self.params
        return ProsodyFusion(p.embedding_dim, 6 if self.speaker_level else 3, p.prosody_dim, p.embedding_dim)

    def fusion_step(self, attacker, utterances):
        import torch

        prosody = attacker.prosody(utterances)
        n = self.params.utterances_per_speaker

        def step(picks, rng):
            attacker.audio.eval()
            with torch.no_grad():
                audio, rows = attacker.audio.training_embeddings(attacker.crops(utterances, picks, rng), n)
                other = attacker.tensor(attacker.prosody_input(prosody[picks]))
            return attacker.fusion(audio, other), rows

        return step

    def side(self, attacker, side):
        prosody = attacker.tensor(attacker.prosody_input(attacker.prosody(side)[None]))
        if self.speaker_level:
            return to_numpy(attacker.fusion(attacker.audio_side(side)[None], prosody)[0])
        return _side_mean(attacker, attacker.fusion(attacker.audio_utterances(side), prosody))


# -- cross-modal attention --------------------------------------------------------------------------


class HybridSystem(System):
    """hybrid: each transcript's tokens cross-attend the frames of their utterance (III-B4)."""

    name = "hybrid"
    uses_text = True
    uses_frame_maps = True

    @property
    def speaker_level(self) -> bool:
        return False

    def build_fusion(self, attacker):
        from vpeval_multiutt.hybrid import HybridFusion

        p = self.params
        return HybridFusion(
            attacker.text.sentence.dim,
            p.channels[-1],
            p.text_dim,
            p.hybrid_attention_dim,
            p.attention_heads,
            p.hybrid_dim,
            p.embedding_dim,
        )

    def fusion_schedule(self) -> dict:
        p = self.params
        return {"epochs": p.hybrid_epochs, "lr": p.hybrid_lr, "weight_decay": p.hybrid_weight_decay}

    def inputs(self, attacker: AttackerParts, frame_maps: list, texts: list[str]) -> tuple:
        """What HybridFusion reads for utterances with these frame maps ([C, T] each, equal T) and transcripts."""
        import torch

        tokens, padding, real = attacker.text.sentence.tokens(texts)
        return tokens, padding, real, torch.stack(frame_maps), attacker.text([[t] for t in texts])

    def fusion_step(self, attacker, utterances):
        import torch

        texts = _transcripts(attacker, utterances)
        n = self.params.utterances_per_speaker

        def step(picks, rng):
            attacker.audio.eval()
            attacker.text.eval()
            with torch.no_grad():
                maps = list(attacker.audio.encoder.frame_map(attacker.crops(utterances, picks, rng)))
                inputs = self.inputs(attacker, maps, [texts[k] for k in picks.ravel()])
            return attacker.fusion(*inputs), n

        return step

    def side(self, attacker, side):
        import torch

        texts = attacker.texts(side)
        fused = torch.cat(
            [attacker.fusion(*self.inputs(attacker, [m[0]], [t])) for m, t in zip(attacker.frame_maps(side), texts)]
        )
        return _side_mean(attacker, fused)


class RjcaSystem(System):
    """rjca: recursive joint cross-attention over the N utterances' audio and text vectors (III-B5)."""

    name = "rjca"
    uses_text = True

    @property
    def speaker_level(self) -> bool:
        return False

    def text_sequence(self, attacker: AttackerParts, sides: list[list[str]]):
        """[S, N, text_dim]: each utterance's text vector."""
        n = len(sides[0])
        return attacker.text([[t] for side in sides for t in side]).view(len(sides), n, -1)

    def build_fusion(self, attacker):
        from vpeval_multiutt.rjca import Rjca

        p = self.params
        return Rjca(
            p.embedding_dim,
            p.text_dim,
            p.rjca_dim,
            p.rjca_recurrent_layers,
            p.rjca_fusion_layers,
            p.attention_heads,
            p.rjca_dropout,
            p.embedding_dim,
            global_text=self.speaker_level,
            pooling=p.rjca_pooling,
        )

    def fusion_step(self, attacker, utterances):
        import torch

        texts = _transcripts(attacker, utterances)
        n = self.params.utterances_per_speaker

        def step(picks, rng):
            attacker.audio.eval()
            attacker.text.eval()
            with torch.no_grad():
                audio, _ = attacker.audio.training_embeddings(attacker.crops(utterances, picks, rng), n)
                text = self.text_sequence(attacker, [[texts[k] for k in row] for row in picks])
            return attacker.fusion(audio.view(len(picks), n, -1), text), 1

        return step

    def side(self, attacker, side):
        audio = attacker.audio_utterances(side)[None]
        return to_numpy(attacker.fusion(audio, self.text_sequence(attacker, [attacker.texts(side)]))[0])


class RjcaGlobalTextSystem(RjcaSystem):
    """rjca-global-text: RJCA with the side's one speaker-level text vector at every position (III-B5)."""

    name = "rjca-global-text"

    @property
    def speaker_level(self) -> bool:
        return True

    def text_sequence(self, attacker, sides):
        """[S, N, text_dim]: the side's speaker-level text vector, repeated."""
        return attacker.text(sides).unsqueeze(1).expand(-1, len(sides[0]), -1)


class SslWhisperSystem(System):
    """ssl-whisper: self-attention over the N utterances' frames, cross-attention to their Whisper frames (III-B6)."""

    name = "ssl-whisper"
    uses_cross_frames = True

    @property
    def audio_aggregation(self) -> str:
        return "frame-concat"

    def build_fusion(self, attacker):
        from vpeval_multiutt.ssl_whisper import SslWhisper

        p = self.params
        return SslWhisper(
            p.channels[-1],
            attacker.cross_frames.dim,
            p.ssl_whisper_dim,
            p.attention_heads,
            p.max_utterances,
            p.attention_channels,
            p.embedding_dim,
        )

    def aligned_crops(
        self, attacker: AttackerParts, utterances: Sequence[Utterance], picks: np.ndarray, rng: np.random.Generator
    ):
        """Crops of the ECAPA frames and of the Whisper frames over the same stretch of each utterance."""

        from vpeval_multiutt.frames import crop_at, crop_start

        seconds, rate, cross_rate = (
            self.params.crop_seconds,
            attacker.frames.frame_rate,
            attacker.cross_frames.frame_rate,
        )
        length, cross_length = max(1, round(seconds * rate)), max(1, round(seconds * cross_rate))
        ecapa, whisper = [], []
        for k in picks.ravel():
            frames = attacker.frames.frames(utterances[k])
            start = crop_start(len(frames), length, rng)
            ecapa.append(crop_at(frames, start, length))
            whisper.append(
                crop_at(attacker.cross_frames.frames(utterances[k]), round(start * cross_rate / rate), cross_length)
            )
        return attacker.tensor(np.stack(ecapa)), attacker.tensor(np.stack(whisper))

    def fusion_step(self, attacker, utterances):
        import torch

        from vpeval_multiutt.ssl_whisper import training_positions

        p = self.params
        n = p.utterances_per_speaker

        def step(picks, rng):
            attacker.audio.eval()
            with torch.no_grad():
                frames, whisper = self.aligned_crops(attacker, utterances, picks, rng)
                maps = attacker.audio.encoder.frame_map(frames).transpose(1, 2)  # [S*N, T, C]
            s, t, tw = len(picks), maps.shape[1], whisper.shape[1]
            positions = training_positions(n, p.max_utterances, rng).to(attacker.device)
            return attacker.fusion(
                maps.reshape(s, n * t, -1),
                positions.repeat_interleave(t),
                whisper.reshape(s, n * tw, -1),
                positions.repeat_interleave(tw),
            ), 1

        return step

    def side(self, attacker, side):
        import torch

        if len(side) > self.params.max_utterances:
            raise DataError(
                f"{attacker.name}: a trial side has {len(side)} utterances but ssl-whisper learned positions for "
                f"{self.params.max_utterances}; raise max_utterances and train again, or use smaller N."
            )
        maps = [m[0].T for m in attacker.frame_maps(side)]
        whisper = [attacker.tensor(attacker.cross_frames.frames(u)) for u in side]
        index = lambda parts: torch.cat([torch.full((len(x),), i, device=attacker.device) for i, x in enumerate(parts)])  # noqa: E731
        fused = attacker.fusion(torch.cat(maps)[None], index(maps), torch.cat(whisper)[None], index(whisper))
        return to_numpy(fused[0])


SYSTEM_CLASSES: dict[str, type[System]] = {
    cls.name: cls
    for cls in (
        MeanSystem,
        QueryAttentionSystem,
        FrameConcatSystem,
        TextSystem,
        AudioTextSystem,
        AudioProsodySystem,
        HybridSystem,
        RjcaSystem,
        RjcaGlobalTextSystem,
        SslWhisperSystem,
    )
}


def system_for(params: MultiUttParams) -> System:
    """The strategy of params.system (audio-text picks its concat or weighted variant from params.fusion)."""
    return SYSTEM_CLASSES[params.system].for_params(params)
