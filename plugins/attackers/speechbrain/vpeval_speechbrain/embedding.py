"""Speaker embeddings the way VoicePrivacy's ASV_eval computes them with SpeechBrain's EncoderClassifier.

VPC 2024 and 2026 (evaluation/privacy/asv): each file is loudness-normalised to -30 LUFS and divided by
its peak (utils.normalize_wave; the division undoes the loudness gain, so it is a peak normalisation),
leading and trailing exact zeros are cut (np.trim_zeros in speechbrain_vectors.extract_vector), and
EncoderClassifier.encode_batch runs compute_features -> mean_var_norm(feats, wav_lens) ->
embedding_model(feats, wav_lens), without mean_var_norm_emb (normalize=False), one file at a time.
Here several waveforms of similar length share a batch, and each gets the vector it gets alone:
- packed (vpeval_torch.packed, as the asv plugin embeds): where the folder's modules map onto it (an
  ECAPA_TDNN or Xvector after a plain Fbank and InputNormalization "sentence" without std_norm, which is
  every folder VoicePrivacy releases), the frames of a batch are concatenated with no padding, and every
  layer that looks across time looks within each utterance: equal to one at a time up to float rounding;
- else zero-padded, with relative lengths counted in feature frames and the per-row padding of
  masking.py; a padded batch of one is VPC's call exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import torch

from vpeval.errors import DataError, MissingModelError
from vpeval_speechbrain.build import SAMPLE_RATE, SpeechBrainModel
from vpeval_speechbrain.masking import RowLengths, reflect_per_row, seeded_pooling_noise


def vpc_waveform(
    audio: np.ndarray, peak_normalize: bool = True, trim_zeros: bool = True, rate: int = SAMPLE_RATE
) -> np.ndarray:
    """One mono waveform at `rate` prepared as VPC prepares it before encode_batch (float32, 16 kHz): divided
    by its peak at its own rate, then resampled as normalize_wave resamples (torchaudio's Resample with its
    defaults), then trimmed."""
    wave = np.asarray(audio, dtype=np.float64).reshape(-1)
    if peak_normalize:
        peak = float(np.max(np.abs(wave))) if wave.size else 0.0
        if peak > 0.0:  # VPC divides by the peak; silence would be NaN there
            wave = wave / peak
    if rate != SAMPLE_RATE:
        wave = toolkit_resample(wave.astype(np.float32), rate).astype(np.float64)
    if trim_zeros:
        wave = np.trim_zeros(wave)
    if wave.size == 0:
        raise DataError("A waveform given to the speechbrain embedder is empty or all zeros; check the audio file.")
    return wave.astype(np.float32)


def toolkit_resample(wave: np.ndarray, rate: int) -> np.ndarray:
    """float32 audio at `rate` to 16 kHz with the filter of VPC's normalize_wave: torchaudio.transforms.Resample
    with its defaults (a windowed-sinc kernel built in float64, applied in float32)."""
    with torch.inference_mode():
        return _resampler(int(rate))(torch.from_numpy(wave)).numpy()


@lru_cache(maxsize=16)
def _resampler(rate: int) -> torch.nn.Module:
    """One Resample per input rate: building its kernel cost as much as applying it (its forward keeps no state,
    so the embedding threads share it)."""
    from torchaudio.transforms import Resample

    with torch.inference_mode():
        return Resample(orig_freq=rate, new_freq=SAMPLE_RATE)


# Frames (10 ms) of one packed batch on the CPU: the sum of its utterances' frames. The asv plugin measured
# 3000-14000 within 5 % of each other for ECAPA (one thread, benchmarks/batching.py); far bigger batches
# leave the caches. Elsewhere max_batch_seconds bounds it.
CPU_BATCH_FRAMES = 8000


class Embedder:
    """Embeddings [B, D] of prepared waveforms from a loaded folder, in packed (or padded) batches on one device."""

    def __init__(
        self,
        model: SpeechBrainModel,
        device: str = "cpu",
        autocast=None,  # a callable returning the run's autocast context (PluginContext.autocast)
        normalize_embeddings: bool = False,
        batch_size: int = 1,
        max_batch_seconds: float | None = None,
        noise_seed: int = 0,
    ):
        if normalize_embeddings and (model.mean_var_norm_emb is None or not _has_statistics(model.mean_var_norm_emb)):
            raise MissingModelError(
                f"normalize_embeddings asks for mean_var_norm_emb, but {model.folder} has no mean_var_norm_emb "
                "with its mean_var_norm_emb.ckpt; set normalize_embeddings: false (VoicePrivacy does not use it)."
            )
        self.model = model.to(device)
        self.rows = RowLengths()
        reflect_per_row(self.model.embedding_model, self.rows)
        seeded_pooling_noise(self.model.embedding_model, noise_seed)
        self.device = device
        self.autocast = autocast
        self.normalize_embeddings = normalize_embeddings
        self.batch_size = batch_size
        self.noise_seed = noise_seed
        self.max_samples = None if max_batch_seconds is None else int(max_batch_seconds * SAMPLE_RATE)
        self.packs = _maps_onto_packed(model)  # False: padded batches
        self._packed: tuple[tuple, object] | None = None  # (weights' state, packed network of them)

    @property
    def dim(self) -> int:
        return self.model.dim

    def embed(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """Embeddings [len(waves), D] float32, in order; waveforms of similar length share a batch."""
        from vpeval_torch.batching import length_buckets, packed_buckets

        out = np.empty((len(waves), self.dim), dtype=np.float32)
        if self.packs:
            frames = [1 + w.shape[0] // self.hop for w in waves]
            for bucket in packed_buckets(frames, self.batch_size, self.max_frames):
                out[bucket] = self.embed_packed([waves[i] for i in bucket])
            return out
        for bucket in length_buckets([w.shape[0] for w in waves], self.batch_size, self.max_samples):
            out[bucket] = self.embed_batch([waves[i] for i in bucket])
        return out

    @property
    def hop(self) -> int:
        return int(self.model.compute_features.compute_STFT.hop_length)

    @property
    def max_frames(self) -> int | None:
        """The most frames of one packed batch: CPU_BATCH_FRAMES on the CPU, max_batch_seconds' elsewhere."""
        if self.device == "cpu":
            return CPU_BATCH_FRAMES
        return None if self.max_samples is None else max(1, self.max_samples // self.hop)

    def buckets(self, samples: Sequence[int]) -> list[list[int]]:
        """Batches of indices for waveforms of about these sample counts (as embed() cuts them)."""
        from vpeval_torch.batching import length_buckets, packed_buckets

        if self.packs:
            return packed_buckets([1 + n // self.hop for n in samples], self.batch_size, self.max_frames)
        return length_buckets(list(samples), self.batch_size, self.max_samples)

    def packed_network(self):
        """vpeval_torch.packed's network of the current weights, laid out again when any weight changes
        (known by identity, storage and version counter, which an in-place update advances)."""
        from vpeval_torch.packed import PackedEcapa, PackedXvector

        net = self.model.embedding_model
        state = tuple((id(t), t.data_ptr(), t._version) for t in (*net.parameters(), *net.buffers()))
        if self._packed is None or self._packed[0] != state:
            if self.model.architecture == "ecapa":
                network = PackedEcapa(net)
            else:
                network = PackedXvector(net, self.noise_seed)
            self._packed = (state, network)
        return self._packed[1]

    def embed_packed(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """One packed batch: the Fbank of each waveform's own frames, each utterance's mean removed (its
        InputNormalization alone), the network on the concatenated frames."""
        from vpeval_torch.packed import packed_features

        tensors = [torch.from_numpy(np.asarray(w, dtype=np.float32)).to(self.device) for w in waves]
        network = self.packed_network()
        with torch.inference_mode():
            frames, packing = packed_features(self.model.compute_features, tensors)  # fp32, outside autocast
            with self.autocast() if self.autocast is not None else _nothing():
                embeddings = network(frames, packing)
            embeddings = embeddings.float()
            if self.normalize_embeddings:
                embeddings = self.model.mean_var_norm_emb(
                    embeddings, torch.ones(embeddings.shape[0], device=embeddings.device)
                )
        return embeddings.reshape(embeddings.shape[0], -1).cpu().numpy().astype(np.float32)

    def embed_batch(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """One padded batch through the modules, as EncoderClassifier.encode_batch(wavs, wav_lens)."""
        from vpeval_torch.batching import pad_batch

        wavs, lengths = pad_batch([np.asarray(w, dtype=np.float32) for w in waves], self.device)
        m = self.model
        with torch.inference_mode():
            feats = m.compute_features(wavs)  # STFT and log-mel in float32 (outside autocast)
            frames = _frame_counts(m.compute_features, lengths, feats.shape[1])
            wav_lens = frames.to(torch.float32) / feats.shape[1]  # 1.0 exactly for a batch of one
            feats = m.mean_var_norm(feats, wav_lens)
            self.rows.frames = frames
            try:
                with self.autocast() if self.autocast is not None else _nothing():
                    embeddings = m.embedding_model(feats, wav_lens)
            finally:
                self.rows.frames = None
            embeddings = embeddings.float()
            if self.normalize_embeddings:
                embeddings = m.mean_var_norm_emb(embeddings, torch.ones(embeddings.shape[0], device=self.device))
        return embeddings.reshape(embeddings.shape[0], -1).cpu().numpy().astype(np.float32)


def _maps_onto_packed(model: SpeechBrainModel) -> bool:
    """Whether vpeval_torch.packed runs this folder's modules as encode_batch does: a plain Fbank, a per-
    sentence mean normalisation without std, an ECAPA_TDNN or Xvector of the layers it knows."""
    from vpeval_torch.packed import PackedEcapa, PackedXvector, check_fbank

    norm = model.mean_var_norm
    if getattr(norm, "norm_type", None) != "sentence" or norm.std_norm or getattr(norm, "length_dim", 1) != 1:
        return False
    try:
        check_fbank(model.compute_features)
        if model.architecture == "ecapa":
            PackedEcapa(model.embedding_model)
        else:
            PackedXvector(model.embedding_model)
    except (ValueError, AttributeError):
        return False
    return True


def _frame_counts(features: torch.nn.Module, samples: torch.Tensor, total: int) -> torch.Tensor:
    """Each row's own frame count: a centred STFT gives 1 + samples // hop frames (at most the batch's)."""
    stft = getattr(features, "compute_STFT", None)
    hop = getattr(stft, "hop_length", None)
    if not isinstance(hop, int) or not getattr(stft, "center", False):
        return torch.clamp(torch.round(samples.to(torch.float64) / samples.max() * total), 1, total).to(torch.long)
    return torch.clamp(1 + samples // hop, 1, total)


def _has_statistics(norm: torch.nn.Module) -> bool:
    """Global statistics loaded from mean_var_norm_emb.ckpt: "sentence" statistics of a single embedding
    frame would subtract the embedding from itself (EncoderClassifier's normalize=True returns zeros)."""
    return getattr(norm, "norm_type", "") == "global" and getattr(norm, "glob_mean", torch.empty(0)).numel() > 0


def _nothing():
    from contextlib import nullcontext

    return nullcontext()
