"""Embedding utterances with a SpeechBrain folder inside a run: the content cache, the CPU workers, GPU batches.

Utterances of similar length run in batches in this process: packed (vpeval_torch.packed) wherever the
folder's network maps onto it, every released ECAPA and x-vector folder does, on the CPU with the run's
workers as threads that each embed whole buckets (the same numbers at any core count); padded on a GPU
otherwise (forked workers cannot share CUDA). With batch_size 1, or a folder that does not map onto the
packed path, the CPU embeds every utterance alone
(VoicePrivacy's encode_batch call) in the run's workers. Results are kept per audio content under an
identity made of the folder's file contents, this code, the parameters and, off the CPU's fp32, the
device and precision.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vpeval.audio import read_audio
from vpeval.content_cache import ContentCache, cached_map, identity_digest, source_digest
from vpeval.errors import BadAudioError, DataError, MissingModelError
from vpeval.types import Utterance
from vpeval_speechbrain.build import READ_FILES, SAMPLE_RATE, SpeechBrainModel, load_folder
from vpeval_speechbrain.embedding import Embedder, toolkit_resample, vpc_waveform
from vpeval_speechbrain.params import SpeechBrainParams
from vpeval_speechbrain.paths import model_folder
from vpeval_speechbrain.ssl import WAVLM_FILE, is_ssl_folder
from vpeval_torch.threads import longest_first, thread_map

GPU_CHUNK = 512  # utterances loaded into memory at a time on the GPU path
# asv_ssl on the CPU: padded audio per WavLM batch (batch x longest). Its output, every layer of every frame,
# is 24 x 1024 floats per 20 ms (4.9 MB per second of WavLM-Large): 60 s make about 300 MB at a time.
SSL_CPU_BATCH_SECONDS = 60.0


class FolderEmbeddings:
    """One folder's embedder for a plugin: loads lazily, embeds waveforms and utterances."""

    def __init__(self, params: SpeechBrainParams, context, name: str):
        self.params = params
        self.context = context
        self.name = name
        self._embedder: Embedder | None = None
        self._ssl = None  # SslEmbedder for VPC 2026's asv_ssl folders
        self._wavlm: Path | None = None  # its WavLM model
        self._folder: Path | None = None
        self._files: list[Path] | None = None  # the files the loaded modules were read from (not asv_ssl)
        # Batches in this process (a GPU, or packed batches on the CPU), else one utterance per call in
        # the run's workers; use() decides once the folder is read.
        self.batches_here = bool(context.on_gpu)

    def use(self, model: SpeechBrainModel) -> None:
        """Embed with these modules (a trained or loaded model) from now on."""
        p = self.params
        self._folder, self._files = model.folder, model.files
        self._ssl = None
        self._embedder = Embedder(
            model,
            self.context.device,
            self.context.autocast,
            p.normalize_embeddings,
            p.batch_size,
            p.max_batch_seconds,
            self.context.torch_seed(self.name, "pooling-noise"),
        )
        self.batches_here = bool(self.context.on_gpu) or (self._embedder.packs and p.batch_size > 1)
        if not self.batches_here:
            self._embedder.batch_size = 1  # VoicePrivacy's call, in the run's workers

    def prepare(self):
        if self._embedder is None and self._ssl is None:
            source = model_folder(self.params.source)
            if source != Path(self.params.source).expanduser():
                self.context.log.info("%s: %s, the toolkit's latest CKPT+ checkpoint folder", self.name, source)
            if self.params.ssl_model is not None or is_ssl_folder(source):
                self._use_ssl(source)
            else:
                self.use(load_folder(source, f"{self.name}.source"))
        return self._ssl if self._ssl is not None else self._embedder

    def _use_ssl(self, folder: Path):
        """Embed with the asv_ssl network of `folder` (the released one, or one vpeval fine-tuned); the WavLM
        model is `ssl_model`, else the folder's WavLM-Large.pt, else the source folder's."""
        from vpeval_speechbrain.ssl import SslEmbedder

        if self.params.normalize_embeddings:
            raise MissingModelError(
                f"{self.name}: normalize_embeddings does not apply to the asv_ssl folder {folder}; set it to false."
            )
        own = folder / WAVLM_FILE
        wavlm = self.params.ssl_model or str(own if own.is_file() else model_folder(self.params.source) / WAVLM_FILE)
        # WavLM in masked batches of similar length (the frontend's: each file's frames as it gets them alone)
        batch = {"batch_size": min(self.params.batch_size, 1024), "max_batch_seconds": self.params.max_batch_seconds}
        frontend = self.context.get("frontend", "wavlm", {"model": wavlm, "layers": "all", **batch})
        self._folder, self._wavlm, self._files = folder, Path(wavlm), None
        self._embedder = None
        self.batches_here = bool(self.context.on_gpu) or self.params.batch_size > 1
        self._ssl = SslEmbedder(folder, frontend, self.context.device, self.context.autocast)
        return self._ssl

    def use_folder(self, folder: Path) -> None:
        """Embed with a model folder vpeval trained (either layout)."""
        if is_ssl_folder(folder):
            self._use_ssl(folder)
        else:
            self.use(load_folder(folder, f"{self.name} trained model", own_checkpoints=True))

    @property
    def dim(self) -> int:
        return self.prepare().dim

    def _vectors(self, raws: Sequence[tuple[np.ndarray, int]]) -> np.ndarray:
        """[B, D] for raw waveforms, each with its rate."""
        return self._prepared_vectors([self.waveform(audio, rate) for audio, rate in raws], raws)

    def _prepared_vectors(self, prepared: list[np.ndarray], raws: Sequence[tuple[np.ndarray, int]]) -> np.ndarray:
        """[B, D] for waveforms prepared as VPC prepares them (`waveform`), with the raw ones they came from."""
        embedder = self.prepare()
        if self._ssl is not None:  # the WavLM stream reads the file as it is (no peak division, no trimming)
            return self._ssl.embed_many(prepared, [self._wavlm_input(audio, rate) for audio, rate in raws])
        return embedder.embed(prepared)

    @staticmethod
    def _wavlm_input(audio: np.ndarray, rate: int) -> np.ndarray:
        """The file's samples for WavLM, at 16 kHz. VPC 2026 hands WavLM the file at its own rate unresampled
        (sf.read in WavLMFeatureExtractor); here another rate is resampled with the log-mel stream's filter
        (torchaudio's Resample), a deliberate difference: 16 kHz files, the challenge's, are the same."""
        audio = np.asarray(audio, dtype=np.float32)
        return audio if rate == SAMPLE_RATE else toolkit_resample(audio, rate)

    def waveform(self, audio: np.ndarray, rate: int = SAMPLE_RATE) -> np.ndarray:
        return vpc_waveform(audio, self.params.peak_normalize, self.params.trim_zeros, rate)

    def embed_audio(self, audios: Sequence[np.ndarray]) -> np.ndarray:
        """[B, D] for raw 16 kHz waveforms (prepared as VoicePrivacy prepares them)."""
        self.context.apply_threads()
        return self._vectors([(audio, SAMPLE_RATE) for audio in audios])

    def embed_utterances(self, utterances: Sequence[Utterance], description: str) -> list[np.ndarray]:
        """One embedding per utterance, in order, from the content cache where present."""
        self.prepare()
        identity = self.identity()
        if not self.batches_here:
            return cached_map(self.context, utterances, identity, self._embed_one, description)
        root = self.context.options.get("cache_root")
        cache = ContentCache(Path(root) / "content", identity) if root else None
        out: list[np.ndarray | None] = [cache.get(u) if cache else None for u in utterances]
        missing = [i for i, value in enumerate(out) if value is None]
        if self._embedder is None and self.context.on_gpu:  # asv_ssl on a GPU: the frontend cuts its own batches
            groups = [missing[start : start + GPU_CHUNK] for start in range(0, len(missing), GPU_CHUNK)]
        else:  # length buckets from the headers: one bucket's audio read at a time
            samples = [_samples(utterances[i]) for i in missing]
            if self._embedder is not None:
                buckets = self._embedder.buckets(samples)
            else:  # asv_ssl on the CPU: WavLM's length buckets
                from vpeval_torch.batching import length_buckets

                limit = int(min(self.params.max_batch_seconds, SSL_CPU_BATCH_SECONDS) * SAMPLE_RATE)
                buckets = length_buckets(samples, self.params.batch_size, limit)
            # the largest buckets first, so the workers' threads end together (the buckets are the same)
            groups = [[missing[j] for j in buckets[b]] for b in longest_first(buckets, samples)]
        self.context.apply_threads()
        if self._embedder is not None and self._embedder.packs:
            self._embedder.packed_network()  # laid out once here, not by each thread

        def embed(group: list[int]) -> np.ndarray:
            loaded = [self._load(utterances[i]) for i in group]
            return self._prepared_vectors([wave for wave, _ in loaded], [raw for _, raw in loaded])

        # On the CPU the run's workers are threads, each embedding whole buckets at the run's torch thread
        # count: the numbers of any core count (vpeval_torch.threads). A GPU runs one bucket at a time.
        workers = 1 if self.context.on_gpu else self.context.workers
        done = thread_map(embed, groups, workers, max(1, self.context.threads))
        for group, vectors in zip(groups, self.context.progress(done, total=len(groups), description=description)):
            for i, vector in zip(group, vectors):
                out[i] = vector
                if cache is not None:
                    cache.put(utterances[i], vector)
        return out  # type: ignore[return-value]

    def _embed_one(self, u: Utterance) -> np.ndarray:
        self.context.apply_threads()
        wave, raw = self._load(u)
        return self._prepared_vectors([wave], [raw])[0]

    def _load(self, u: Utterance) -> tuple[np.ndarray, tuple[np.ndarray, int]]:
        """The utterance's waveform prepared as VPC prepares it, and its audio as read at its own rate (VPC
        resamples after the peak normalisation); refused in one sentence where VPC's trimming leaves nothing."""
        try:
            audio, rate = read_audio(u.path, channel=u.channel)
            return self.waveform(audio, rate), (audio, rate)
        except DataError:
            reason = "it is empty or all zeros, so VoicePrivacy's zero trimming leaves nothing"
            raise BadAudioError(str(u.path), reason) from None

    def identity(self) -> str:
        """What an embedding depends on besides the audio: the folder's files, this code, the settings."""
        from vpeval.data.fingerprint import file_hash
        from vpeval.device import numerics_identity
        from vpeval_speechbrain import build, embedding, hparams, service
        from vpeval_torch import packed

        self.prepare()
        assert self._folder is not None
        files = list(self._files or [])
        if self._files is None:  # asv_ssl: its folder's files by name
            files = [self._folder / name for name in READ_FILES if (self._folder / name).is_file()]
        if self._ssl is not None:  # the WavLM model, wherever it is
            ssl = self._wavlm.expanduser()
            files += sorted(f for f in ssl.iterdir() if f.is_file()) if ssl.is_dir() else [ssl]
        settings = self.params.model_dump(mode="json", include={"peak_normalize", "trim_zeros", "normalize_embeddings"})
        settings["asv_ssl"] = self._ssl is not None
        if self.batches_here:  # batches equal one-by-one to about 1e-7, not bit for bit
            settings["batch_size"] = self.params.batch_size
            settings["packed"] = bool(self._embedder is not None and self._embedder.packs)
        return "speechbrain-" + identity_digest(
            [(f.name, file_hash(f)) for f in files],
            source_digest(build, embedding, hparams, service, packed),
            settings,
            numerics_identity(self.context.device, self.context.precision),
        )


def _samples(u: Utterance) -> int:
    """An utterance's length in 16 kHz samples, from its declared duration or the file header (no samples read)."""
    if u.duration:
        return int(u.duration * SAMPLE_RATE)
    import soundfile as sf

    try:
        info = sf.info(u.path)
    except (sf.LibsndfileError, RuntimeError, ValueError):
        return 0  # unreadable: reading it for the embedding raises the sentence that names it
    return int(info.frames * SAMPLE_RATE / info.samplerate)
