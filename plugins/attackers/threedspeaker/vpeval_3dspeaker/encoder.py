"""The "campplus" and "eres2net" speaker encoders: 3D-Speaker's / WeSpeaker's published networks from a local file.

embed: fbank of the waveform, then the network on it alone (the published inference, infer_sv.py).
embed_batch: utterances sorted by length and cut into zero-padded batches with per-row frame counts,
equal to `embed` of each up to float rounding (tests: below 1e-4 relative on the CPU). embed_corpus:
from the content cache where present; misses one by one in the run's workers on the CPU, batched here
on a GPU (forked workers cannot share CUDA). Nothing is downloaded: the model file is the user's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from vpeval.api import SpeakerEncoder
from vpeval.errors import BadAudioError, DataError, MissingModelError
from vpeval.types import Corpus, Utterance
from vpeval_3dspeaker.params import CampplusParams, ERes2NetParams, FolderParams

CORPUS_CHUNK = 512  # utterances read into memory at a time on the GPU path


def length_buckets(lengths: Sequence[int], batch_size: int, max_frames: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (sorted, ties by index), each at most `batch_size`
    long and, past its first member, at most `max_frames` padded frames (batch x longest)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    for i in order:  # ascending: the newcomer is its batch's longest
        last = batches[-1] if batches else None
        if last is None or len(last) == batch_size or (len(last) + 1) * lengths[i] > max_frames:
            batches.append([i])
        else:
            last.append(i)
    return batches


class FolderEncoder(SpeakerEncoder):
    """Shared by campplus and eres2net: the model file, the front end, batching and the cache."""

    sample_rate: ClassVar[int] = 16000
    device_sensitive: ClassVar[bool] = True
    architecture: ClassVar[str] = ""
    Params: ClassVar[type[FolderParams]] = FolderParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._network = None
        self._file: Path | None = None

    @classmethod
    def missing_paths(cls, params: FolderParams) -> list[str]:
        from vpeval_3dspeaker.paths import missing

        return missing(params.source, params.format, f"the {cls.name} encoder's")

    def build(self, params, embedding_size: int, pool_eps: float):
        """The torch network of these params (subclasses)."""
        raise NotImplementedError

    def min_frames(self) -> int:
        raise NotImplementedError

    def prepare(self) -> None:
        """Load the model file; `dim` becomes its embedding size."""
        if self._network is not None:
            return
        from vpeval_3dspeaker.networks import OnnxNetwork, torch_network
        from vpeval_3dspeaker.paths import model_file

        p = self.params
        path, kind = model_file(p.source, p.format, f"the {self.name} encoder's")
        if kind == "onnx":
            network = OnnxNetwork(path, p.layout, self.context.device, self.context.threads, f"encoder {self.name}")
            width = network.session.get_inputs()[0].shape[-1]
            if isinstance(width, int) and width != p.feat_dim:
                raise MissingModelError(
                    f"encoder {self.name}: {path} takes {width} fbank bins and feat_dim is {p.feat_dim}; set feat_dim: "
                    f"{width}."
                )
        else:
            network = torch_network(
                self.architecture, p, path, self.context.device, self.context.autocast, self.name, self.build
            )
        self._network, self._file = network, path
        self.dim = network.dim

    @property
    def layout(self) -> str:
        self.prepare()
        return self._network.layout

    def too_short(self, samples: int) -> str | None:
        """Why a waveform of `samples` cannot be embedded (its pooling needs two frames), or None."""
        from vpeval_3dspeaker.features import FRAME_SAMPLES, HOP_SAMPLES, frame_count

        need = self.min_frames()
        if frame_count(samples) >= need:
            return None
        shortest = FRAME_SAMPLES + (need - 1) * HOP_SAMPLES
        return (
            f"it has {samples} samples and the {self.name} encoder needs at least {shortest} "
            f"({shortest / 16000:.3f} s at 16 kHz) to pool its frames; leave such utterances out"
        )

    def features(self, audio: np.ndarray):
        """Mean-normalised fbank [frames, feat_dim] on the run's device, refused when too short to pool."""
        from vpeval_3dspeaker.features import fbank

        wave = np.asarray(audio, dtype=np.float32).reshape(-1)
        reason = self.too_short(wave.shape[0])
        if reason is not None:
            raise DataError(f"A waveform cannot be embedded: {reason}.")
        if not np.isfinite(wave).all():
            raise DataError(f"A waveform given to the {self.name} encoder holds NaN or infinite samples.")
        device = getattr(self._network, "device", "cpu")  # the ONNX session takes numpy arrays
        return fbank(wave, self.params.feat_dim, self._network.layout, device)

    def embed(self, audio: np.ndarray) -> np.ndarray:
        """One embedding [D] of a 16 kHz waveform, the published way (the network on it alone)."""
        self.prepare()
        self.context.apply_threads()
        return self._network.embed([self.features(audio)])[0]

    def embed_batch(self, audios: Sequence[np.ndarray]) -> np.ndarray:
        """[B, D] in order: zero-padded batches of similar length with per-row frame counts."""
        self.prepare()
        self.context.apply_threads()
        if len(audios) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        feats = [self.features(a) for a in audios]
        out = np.empty((len(feats), self.dim), dtype=np.float32)
        max_frames = int(self.params.max_batch_seconds * 100)
        for bucket in length_buckets([f.shape[0] for f in feats], self.params.batch_size, max_frames):
            out[bucket] = self._network.embed([feats[i] for i in bucket])
        return out

    def embed_corpus(self, corpus: Corpus) -> np.ndarray:
        from vpeval.content_cache import cached_batches, cached_map

        self.prepare()
        utterances = list(corpus.utterances)
        description = f"{self.name}: embed"
        if self.context.on_gpu:
            vectors = cached_batches(
                self.context, utterances, self.identity(), self._embed_many, CORPUS_CHUNK, description
            )
        else:
            vectors = cached_map(self.context, utterances, self.identity(), self._embed_one, description)
        return np.stack(vectors) if vectors else np.zeros((0, self.dim), dtype=np.float32)

    def _embed_one(self, u: Utterance) -> np.ndarray:
        return self.embed(self._load(u))

    def _embed_many(self, utterances: Sequence[Utterance]) -> list[np.ndarray]:
        return list(self.embed_batch([self._load(u) for u in utterances]))

    def _load(self, u: Utterance) -> np.ndarray:
        """The utterance's 16 kHz audio; one too short to embed is named by its file."""
        audio = u.load(self.sample_rate)
        reason = self.too_short(int(np.asarray(audio).size))
        if reason is not None:
            raise BadAudioError(str(u.path), reason)
        return audio

    def identity(self) -> str:
        """What an embedding depends on besides the audio: the model file, this code, the settings, the device."""
        from vpeval.content_cache import identity_digest, source_digest
        from vpeval.data.fingerprint import file_hash
        from vpeval.device import numerics_identity
        from vpeval_3dspeaker import campplus, checkpoint, encoder, eres2net, features, masking, networks

        self.prepare()
        settings = self.params.model_dump(mode="json", exclude={"source", "batch_size", "max_batch_seconds"})
        settings["layout"] = self._network.layout
        if self.context.on_gpu:  # batched there: equal to one by one up to rounding, not bit for bit
            settings["batch_size"] = self.params.batch_size
        return f"{self.name}-" + identity_digest(
            (self._file.name, file_hash(self._file)),
            source_digest(campplus, checkpoint, encoder, eres2net, features, masking, networks),
            settings,
            numerics_identity(self.context.device, self.context.precision),
        )


class CampplusEncoder(FolderEncoder):
    """CAM++ speaker embeddings (3D-Speaker / WeSpeaker checkpoints or ONNX exports): 512-d VoxCeleb, 192-d common."""

    name: ClassVar[str] = "campplus"
    architecture: ClassVar[str] = "campplus"
    Params: ClassVar[type[CampplusParams]] = CampplusParams

    def build(self, params: CampplusParams, embedding_size: int, pool_eps: float):
        from vpeval_3dspeaker.campplus import CAMPPlus

        return CAMPPlus(
            params.feat_dim, embedding_size, params.growth_rate, params.bn_size, params.init_channels, pool_eps
        )

    def min_frames(self) -> int:
        return 3  # two frames for the deviation after the TDNN's stride 2


class ERes2NetEncoder(FolderEncoder):
    """ERes2Net speaker embeddings (3D-Speaker / WeSpeaker checkpoints or ONNX exports): 192-d VoxCeleb."""

    name: ClassVar[str] = "eres2net"
    architecture: ClassVar[str] = "eres2net"
    Params: ClassVar[type[ERes2NetParams]] = ERes2NetParams

    def build(self, params: ERes2NetParams, embedding_size: int, pool_eps: float):
        from vpeval_3dspeaker.eres2net import ERes2Net

        return ERes2Net(
            params.feat_dim,
            embedding_size,
            params.m_channels,
            params.num_blocks,
            params.base_width,
            params.scale,
            params.expansion,
            params.two_emb_layer,
            pool_eps,
        )

    def min_frames(self) -> int:
        return 9  # two frames for the deviation after three strides of 2
