"""Embedding extraction with a trained network, batched by length, cached by audio content.

Utterances of similar length are embedded together as one packed batch (vpeval_torch.packed): their
frames are concatenated, never padded, and every layer that looks across time looks within each
utterance, so an utterance's embedding equals its unbatched one up to float rounding (cosine distance
below 1e-5, tested) whatever else is in its batch. `embed_audio` keeps the one-at-a-time forward: the
encoders' single-waveform `embed` and the reference the batched path is tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

import numpy as np
import torch

from vpeval.api import PluginContext
from vpeval.content_cache import ContentCache, identity_digest, source_digest
from vpeval.sides import utterance_key
from vpeval.types import Utterance
from vpeval.vector_table import VectorTable
from vpeval_asv.models import ModelConfig, build_embedding_model
from vpeval_torch.batching import packed_buckets
from vpeval_torch.fbank import FbankFeatures
from vpeval_torch.threads import longest_first, thread_map

if TYPE_CHECKING:
    from vpeval_torch.packed import Packing

MIN_SAMPLES = 400  # one 25 ms window at 16 kHz: shorter input is zero-padded to it
HOP = 160  # speechbrain Fbank's 10 ms hop: frames = 1 + samples // HOP
# Frames (10 ms each) of one packed batch when the parameters leave it open: the sum of its utterances'
# frames (vpeval_torch.batching.packed_buckets; packed batches have no padding). On a CPU about 80 s of
# speech per batch: 3000 to 14000 frames measured within 5 % of each other for ECAPA 128/384 (one
# thread, benchmarks/batching.py; 1000 was 25 % slower: more calls; far bigger batches leave the
# caches); a GPU wants large batches (200000 frames: about 2 GB of ECAPA activations).
DEFAULT_BATCH_FRAMES = {"cpu": 8000, "cuda": 200_000}


class Embedder:
    """A network and its features on one device, in eval mode for embedding."""

    def __init__(
        self,
        config: ModelConfig,
        model: torch.nn.Module | None = None,
        max_seconds: float | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        batch_frames: int | None = None,
        autocast: Callable[[], AbstractContextManager] | None = None,
    ):
        self.config = config
        self.device = device
        self.features = FbankFeatures(config.n_mels, config.sample_rate).to(device)
        self.model = (model if model is not None else build_embedding_model(config)).to(device)
        self.max_samples = None if max_seconds is None else int(max_seconds * config.sample_rate)
        self.batch_size = batch_size
        kind = "cpu" if device == "cpu" else "cuda"  # any accelerator wants large batches
        self.batch_frames = batch_frames or DEFAULT_BATCH_FRAMES[kind]
        self.autocast = autocast or nullcontext
        self.cache = VectorTable(np.float32)  # (path, channel) -> raw embedding
        self._packed: tuple[tuple, Callable] | None = None  # (weights' state, packed network of them)

    def _prepare(self, audio: np.ndarray) -> np.ndarray:
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        if self.max_samples is not None:
            audio = audio[: self.max_samples]
        if audio.size < MIN_SAMPLES:  # shorter than one window: pad so the network sees a few frames
            audio = np.pad(audio, (0, MIN_SAMPLES - audio.size))
        return audio

    def embed_audio(self, audio: np.ndarray) -> np.ndarray:
        """Raw embedding [D] of mono float32 audio at the model's sample rate, alone (speechbrain's forward)."""
        audio = self._prepare(audio)
        was_training = self.model.training
        self.model.eval()
        # speechbrain's x-vector statistics pooling adds tiny noise from torch's global generator even
        # in eval mode: a fixed seed per call keeps an utterance's embedding independent of call order.
        with torch.no_grad(), torch.random.fork_rng(devices=_fork_devices(self.device)):
            torch.manual_seed(0)
            feats = self.features(torch.from_numpy(audio).unsqueeze(0).to(self.device))
            with self.autocast():
                out = self.model(feats).reshape(-1)
        self.model.train(was_training)
        return out.float().cpu().numpy().astype(np.float32)

    def packed_network(self) -> Callable[[torch.Tensor, Packing], torch.Tensor]:
        """The network prepared for packed batches (weights laid out once), kept until a weight changes:
        every parameter and buffer is known by identity, storage and version counter, which any in-place
        update (an optimizer step, load_state_dict, a batch norm's running statistics) advances."""
        from vpeval_torch.packed import PACKED_NETWORK

        state = tuple((id(t), t.data_ptr(), t._version) for t in (*self.model.parameters(), *self.model.buffers()))
        if self._packed is None or self._packed[0] != state:
            self._packed = (state, PACKED_NETWORK[self.config.architecture](self.model))
        return self._packed[1]

    def embed_batch(self, audios: Sequence[np.ndarray], network: Callable | None = None) -> np.ndarray:
        """Raw embeddings [B, D] of several waveforms as one packed batch (no size limit: see embed_many).

        `network` is packed_network() of the current weights, when the caller embeds several batches.
        """
        from vpeval_torch.packed import packed_features

        if len(audios) == 0:
            return np.zeros((0, self.config.embedding_dim), dtype=np.float32)
        waves = [torch.from_numpy(self._prepare(a)).to(self.device) for a in audios]
        # no eval() / train() here: the packed network reads the weights and running statistics (eval
        # semantics whatever the mode), and toggling ECAPA's ~200 modules cost ~0.5 ms a batch
        with torch.no_grad():
            frames, packing = packed_features(self.features, waves)  # fp32: features stay out of autocast
            with self.autocast():
                out = (network or self.packed_network())(frames, packing)
        return out.float().cpu().numpy().astype(np.float32)

    def embed_many(self, audios: Sequence[np.ndarray]) -> np.ndarray:
        """Raw embeddings [U, D], in order, computed in length buckets of at most batch_size / batch_frames."""
        out = np.zeros((len(audios), self.config.embedding_dim), dtype=np.float32)
        network = self.packed_network()
        for bucket in self.buckets([self._prepare(a).size for a in audios]):
            out[bucket] = self.embed_batch([audios[i] for i in bucket], network)
        return out

    def buckets(self, samples: Sequence[int]) -> list[list[int]]:
        """Batches of indices of similar length for inputs of these sample counts."""
        cut = [min(n, self.max_samples) if self.max_samples is not None else n for n in samples]
        frames = [1 + max(n, MIN_SAMPLES) // HOP for n in cut]
        return packed_buckets(frames, self.batch_size, self.batch_frames)

    def embed_utterances(
        self,
        utterances: Sequence[Utterance],
        progress: Callable[[Iterable, int, str], Iterable] | None = None,
        description: str = "embed",
        context: PluginContext | None = None,
    ) -> np.ndarray:
        """Raw embeddings [U, D]; each distinct file (and channel) is read and embedded once per Embedder.

        With a plugin context, stored ones come from the run's content cache; the rest are embedded here
        in length buckets, reading only the audio of the buckets in flight. On a CPU the run's workers embed
        buckets side by side (threads), each at the run's torch thread count.
        """
        keys = [utterance_key(u) for u in utterances]
        todo = list({key: u for key, u in zip(keys, utterances) if key not in self.cache}.values())
        store = _ContentStore(context, self.identity()) if context is not None else None
        if store is not None and todo:
            found = store.load(todo)
            stored = [(utterance_key(u), v) for u, v in zip(todo, found) if v is not None]
            if stored:
                self.cache.add([k for k, _ in stored], [v for _, v in stored])
            todo = [u for u, v in zip(todo, found) if v is None]
        if todo:
            samples = [utterance_samples(u, self.config.sample_rate) for u in todo]
            buckets = self.buckets(samples)
            # the largest buckets first, so the workers' threads end together (the buckets are the same)
            buckets = [buckets[b] for b in longest_first(buckets, samples)]
            if progress is None and context is not None:
                progress = context.progress
            network = self.packed_network()

            def embed(bucket: list[int]) -> np.ndarray:
                return self.embed_batch([todo[i].load(self.config.sample_rate) for i in bucket], network)

            # On a CPU the run's workers are threads that each embed whole buckets at the run's torch thread
            # count: the same numbers at any core count (vpeval_torch.threads); a GPU takes one at a time.
            here = context is None or self.device != "cpu"
            workers, threads = (1, torch.get_num_threads()) if here else (context.workers, context.threads)
            done = thread_map(embed, buckets, workers, threads)
            if progress is not None:
                done = progress(done, total=len(buckets), description=description)
            for bucket, vectors in zip(buckets, done):
                batch = [todo[i] for i in bucket]
                self.cache.add([utterance_key(u) for u in batch], vectors)
                if store is not None:
                    for u, v in zip(batch, vectors):
                        store.put(u, v)
        if not utterances:
            return np.zeros((0, self.config.embedding_dim), dtype=np.float32)
        return self.cache.take(keys)

    def forget(self) -> None:
        """Drop remembered embeddings (the weights changed)."""
        self.cache.clear()
        self._identity = None

    def identity(self) -> str:
        """What an embedding depends on besides the audio: weights, configuration, code, torch release."""
        if getattr(self, "_identity", None) is None:
            from vpeval_asv import models, padding
            from vpeval_torch import batching, fbank, packed

            state = [t.detach().cpu().numpy() for t in self.model.state_dict().values()]
            self._identity = "asv-" + identity_digest(
                torch.__version__,
                source_digest(fbank, batching, models, packed, padding, _this_module()),
                self.config,
                self.max_samples,
                *state,
            )
        return self._identity


class _ContentStore:
    """The run's content cache for one extractor identity (nothing stored outside a run).

    As vpeval.content_cache.cached_map: each file's stat stamp is taken before its content is hashed,
    and a result is stored only if the file still has that stamp after it was read.
    """

    def __init__(self, context: PluginContext, extractor: str):
        root = context.options.get("cache_root")
        self.cache = ContentCache(f"{root}/content", extractor) if root else None
        self.where: dict[tuple[str, int | None], tuple[object, object]] = {}

    def load(self, utterances: Sequence[Utterance]) -> list[np.ndarray | None]:
        if self.cache is None:
            return [None] * len(utterances)
        from vpeval.data.fingerprint import file_stamp

        found = []
        for u in utterances:
            stamp = file_stamp(u.path)
            path = self.cache.path(u)
            self.where[utterance_key(u)] = (stamp, path)
            found.append(ContentCache.load(path))
        return found

    def put(self, utterance: Utterance, value: np.ndarray) -> None:
        from vpeval.data.fingerprint import file_stamp

        stamp, path = self.where.get(utterance_key(utterance), (None, None))
        if self.cache is not None and stamp is not None and file_stamp(utterance.path) == stamp:
            self.cache.put(utterance, value, path)


def utterance_samples(u: Utterance, sample_rate: int) -> int:
    """An utterance's length in samples at `sample_rate`, from its declared duration or the file header."""
    if u.duration:
        return int(u.duration * sample_rate)
    import soundfile as sf

    try:
        info = sf.info(u.path)
    except (sf.LibsndfileError, RuntimeError, ValueError):
        return 0  # unreadable: reading it for the embedding raises the sentence that names it
    return int(info.frames * sample_rate / info.samplerate)


def _fork_devices(device: str) -> list:
    return [torch.device(device)] if device.startswith("cuda") else []


def _this_module():
    import sys

    return sys.modules[__name__]
