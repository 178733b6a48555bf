"""Audio to network inputs to embeddings: the Fbank stream, the frozen SSL stream and the trainable network.

Embedding runs in padded batches of utterances of similar length (vpeval_torch.batching): the Fbank
mean and the network see each row's real frames only (model.py), and the SSL states are computed for
each utterance alone (or read from the disk store; a frontend stream batches them with its own masks), so
a row's embedding is its utterance's alone up to float summation order (tests: max cosine distance 1e-5;
through the wavlm frontend 1e-4).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from vpeval.types import Utterance
from vpeval_dast.model import PAD_MARGIN, DastNetwork, SpecAugment
from vpeval_dast.ssl import FrozenSsl
from vpeval_torch.fbank import FbankFeatures

SAMPLE_RATE = 16000
FBANK_HOP = 160  # speechbrain Fbank: 10 ms
MIN_SAMPLES = SAMPLE_RATE // 10  # shorter than the convolutions' reach: repeated to this
# With an SSL stream, at least 5 frames at 50/s (WavLM's CNN: (n - 400) // 320 + 1), more than the widest
# convolution's reach of 4: 0.125 s.
MIN_SAMPLES_SSL = 2000


class Embedder:
    """The network with its two input streams, on one device.

    ssl_store: the disk store of whole-utterance SSL states (ssl_context: utterance), else None.
    ssl_augment: SpecAugment of the SSL states in training (section 3.2 masks both streams), else None.
    """

    def __init__(
        self,
        network: DastNetwork,
        ssl: FrozenSsl | None,
        specaugment: SpecAugment,
        embed_max_seconds: float | None = None,
        ssl_store: SslStore | None = None,
        ssl_augment: SpecAugment | None = None,
        device: str = "cpu",
        autocast=contextlib.nullcontext,
        batch_size: int = 16,
    ):
        self.device = torch.device(device)
        self.network = network.to(self.device)
        self.ssl = ssl
        self.ssl_store = ssl_store if ssl is not None else None
        self.specaugment = specaugment
        self.ssl_augment = ssl_augment if ssl is not None else None
        self.fbank = FbankFeatures(network.config.n_mels).to(self.device) if network.config.fusion != "ssl" else None
        self.max_samples = None if embed_max_seconds is None else int(embed_max_seconds * SAMPLE_RATE)
        self.min_samples = MIN_SAMPLES if ssl is None else MIN_SAMPLES_SSL
        self.autocast = autocast
        self.batch_size = batch_size

    # -- training inputs: equal-length crops ------------------------------------------------------

    def inputs(self, waves: torch.Tensor, generator: torch.Generator | None = None, hidden: torch.Tensor | None = None):
        """(Fbank frames or None, SSL hidden states or None) of equal-length waves [B, samples] on the device;
        SpecAugment on both streams when a generator is given. `hidden`: the SSL states of these waves, already
        computed (ssl_context: utterance)."""
        waves = waves.to(self.device)
        fbank = self.fbank(waves) if self.fbank is not None else None
        if fbank is not None and generator is not None:
            fbank = self.specaugment(fbank, generator)
        if self.ssl is None:
            return fbank, None
        if hidden is None:
            with self.autocast():
                hidden = self.ssl.hidden_states(waves)
        hidden = hidden.to(self.device, torch.float32)
        if generator is not None and self.ssl_augment is not None:
            hidden = self.ssl_augment.hidden(hidden, generator)
        return fbank, hidden

    # -- embedding ----------------------------------------------------------------------------------

    def prepared(self, audio: np.ndarray) -> np.ndarray:
        """What the network hears of an utterance: at most embed_max_seconds, very short audio repeated."""
        audio = np.asarray(audio, dtype=np.float32)[: self.max_samples]
        if audio.size < self.min_samples:
            seed = audio if audio.size else np.zeros(1, np.float32)
            audio = np.tile(seed, -(-self.min_samples // seed.size))
        return audio

    def _stored(self, raw: np.ndarray, audio: np.ndarray, utterance: Utterance | None) -> bool:
        """Whether an utterance's states come from the store: only for its whole audio, as stored (not cut
        by embed_max_seconds, not repeated to the minimum length)."""
        return self.ssl_store is not None and utterance is not None and audio.size == np.asarray(raw).size

    def _states(self, audio: np.ndarray, utterance: Utterance | None, stored: bool) -> torch.Tensor:
        """One utterance's SSL states [L, T, D] (float32, on the device): from the store, or computed."""
        if stored:
            return torch.from_numpy(np.array(self.ssl_store.load(utterance, audio))).to(self.device, torch.float32)
        with torch.no_grad(), self.autocast():
            states = self.ssl.hidden_states(torch.from_numpy(audio)[None].to(self.device))
        return states[:, 0].float()

    def _states_many(
        self, audios: list[np.ndarray], utterances: Sequence[Utterance | None], stored: list[bool]
    ) -> list[torch.Tensor]:
        """The SSL states of a batch's utterances: from the store, or from the SSL model (which batches them
        where it can mask padding: a frontend)."""
        if any(stored):
            return [self._states(a, u, keep) for a, u, keep in zip(audios, utterances, stored)]
        with torch.no_grad(), self.autocast():
            return [s.float() for s in self.ssl.states_many(audios, self.device)]

    def embed_audio(self, audio: np.ndarray, utterance: Utterance | None = None) -> np.ndarray:
        """The embedding of one whole utterance, unpadded (the reference the batches equal)."""
        raw, audio = audio, self.prepared(audio)
        self.network.eval()
        with torch.no_grad():
            hidden = None
            if self.ssl is not None:
                hidden = self._states(audio, utterance, self._stored(raw, audio, utterance))[:, None]
            fbank, hidden = self.inputs(torch.from_numpy(audio)[None], hidden=hidden)
            with self.autocast():
                out = self.network(fbank, hidden)
        return out[0].float().cpu().numpy().astype(np.float64)

    def embed_batch(self, audios: Sequence[np.ndarray], utterances: Sequence[Utterance | None]) -> np.ndarray:
        """Embeddings [B, E] of whole utterances in one padded batch, each row equal to embed_audio's."""
        raws, audios = audios, [self.prepared(a) for a in audios]
        self.network.eval()
        with torch.no_grad():
            fbank = fbank_lengths = hidden = ssl_lengths = None
            if self.fbank is not None:
                fbank, fbank_lengths = self.padded_fbank(audios)
            if self.ssl is not None:
                stored = [self._stored(r, a, u) for r, a, u in zip(raws, audios, utterances)]
                states = self._states_many(audios, utterances, stored)
                ssl_lengths = torch.tensor([s.shape[1] for s in states], device=self.device)
                layers, _, dim = states[0].shape
                hidden = torch.zeros(layers, len(states), int(ssl_lengths.max()) + PAD_MARGIN, dim, device=self.device)
                for row, s in enumerate(states):
                    hidden[:, row, : s.shape[1]] = s
            with self.autocast():
                out = self.network(fbank, hidden, fbank_lengths, ssl_lengths)
        return out.float().cpu().numpy().astype(np.float64)

    def padded_fbank(self, audios: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean-normalised Fbank frames of zero-padded waves [B, T + margin, n_mels] and real frames per row.

        speechbrain's STFT pads each end with zeros (center=True, constant), so a row's real frames see the
        same samples as the utterance alone; the per-sentence mean is taken over them only."""
        from vpeval_torch.batching import length_mask, pad_batch

        waves, samples = pad_batch(audios, device=self.device)
        lengths = samples // FBANK_HOP + 1
        feats = self.fbank.fbank(waves)  # log-mel before normalisation
        mask = length_mask(lengths, feats.shape[1]).unsqueeze(-1)
        mean = (feats * mask).sum(dim=1, keepdim=True) / lengths.view(-1, 1, 1)
        feats = torch.where(mask, feats - mean, torch.zeros((), device=feats.device))
        return torch.nn.functional.pad(feats, (0, 0, 0, PAD_MARGIN)), lengths

    def embed_utterances(self, utterances: Sequence[Utterance], context=None, description: str = "") -> np.ndarray:
        """Embeddings [U, E], each distinct utterance embedded once, in length buckets of batch_size."""
        from vpeval_torch.batching import length_buckets
        from vpeval_torch.crops import crop_items

        lookup = {(u.path, u.channel): u for u in utterances}
        unique = list(lookup)
        items = crop_items([lookup[k] for k in unique], [0] * len(unique))  # lengths from metadata or headers
        lengths = [round(i.frames * SAMPLE_RATE / i.sample_rate) for i in items]
        batches = length_buckets(lengths, self.batch_size)
        if context is not None:
            batches = context.progress(batches, total=len(batches), description=description)
        by_key = {}
        for batch in batches:
            chosen = [lookup[unique[i]] for i in batch]
            for u, row in zip(chosen, self.embed_batch([u.load(SAMPLE_RATE) for u in chosen], chosen)):
                by_key[(u.path, u.channel)] = row
        return np.stack([by_key[(u.path, u.channel)] for u in utterances])


class SslStore:
    """The frozen SSL model's hidden states of whole utterances [L, T, D] (float16), one .npy file per
    utterance in a folder of the run cache, read memory-mapped (ssl_context: utterance): computed once per
    run and shared by the run's dast attackers with the same SSL model, for training and embedding, with
    no copy in RAM. A file is known by path, channel, size and modification time, so a rewritten file is
    computed again; finding an utterance's states reads no audio."""

    def __init__(self, folder: Path, ssl: FrozenSsl, device: str = "cpu", autocast=contextlib.nullcontext):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ssl = ssl
        self.device = device
        self.autocast = autocast

    def path(self, utterance: Utterance) -> Path:
        try:
            stat = Path(utterance.path).stat()
            version = (stat.st_size, stat.st_mtime_ns)
        except OSError:
            version = None
        key = repr((str(utterance.path), utterance.channel, version, SAMPLE_RATE))
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.npy"

    def load(self, utterance: Utterance, audio: np.ndarray | None = None) -> np.ndarray:
        """The states of the utterance's whole audio (16 kHz), memory-mapped; computed and stored the first
        time (from `audio` when given, else read)."""
        return np.load(self.ensure(utterance, audio), mmap_mode="r")

    def ensure(self, utterance: Utterance, audio: np.ndarray | None = None) -> Path:
        target = self.path(utterance)
        if not target.is_file():
            if audio is None:
                audio = utterance.load(SAMPLE_RATE)
            with torch.no_grad(), self.autocast():
                states = self.ssl.hidden_states(torch.from_numpy(np.asarray(audio, np.float32))[None].to(self.device))
            partial = target.with_suffix(f".{os.getpid()}.tmp.npy")
            np.save(partial, states[:, 0].float().cpu().numpy().astype(np.float16))
            os.replace(partial, target)  # atomic: another process never reads half a file
        return target


def random_crop(audio: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """A random stretch of `length` samples; shorter audio is repeated to fill it."""
    if audio.size == 0:
        return np.zeros(length, dtype=np.float32)
    if audio.size < length:
        return np.tile(audio, -(-length // audio.size))[:length]
    start = int(rng.integers(0, audio.size - length + 1))
    return audio[start : start + length]


def random_crop_with_frames(
    audio: np.ndarray, hidden: np.ndarray, length: int, hop: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A random stretch of `length` samples and the SSL frames [L, length // hop, D] of the same stretch
    (hidden holds the whole utterance's frames, one per `hop` samples); shorter audio is repeated to fill
    it, its frames likewise. One draw from rng, as random_crop makes."""
    frames = max(1, length // hop)
    if audio.size == 0:
        return np.zeros(length, dtype=np.float32), np.zeros((hidden.shape[0], frames, hidden.shape[2]), hidden.dtype)
    if audio.size < length:
        reps = -(-length // audio.size)
        return np.tile(audio, reps)[:length], _frames(np.tile(hidden, (1, reps, 1)), 0, frames)
    first = int(rng.integers(0, audio.size - length + 1)) // hop
    start = first * hop  # the wave crop starts where its first frame does
    return audio[start : start + length], _frames(hidden, first, frames)


def _frames(hidden: np.ndarray, first: int, count: int) -> np.ndarray:
    """hidden[:, first:first + count], the last frame repeated where the utterance's frames run out."""
    out = np.asarray(hidden[:, first : first + count])
    if out.shape[1] < count:
        tail = np.repeat(np.asarray(hidden[:, -1:]), count - out.shape[1], axis=1)
        out = np.concatenate([out, tail], axis=1)
    return out


def length_normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
