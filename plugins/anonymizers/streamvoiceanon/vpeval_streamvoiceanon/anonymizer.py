"""stream-voice-anon: Stream-Voice-Anon (Kuzmin et al., ICASSP 2026) from the published checkpoints.

Per utterance (seed 000's recipe): a target speaker drawn with the voice's rng from the pool, one of its
utterances longer than min_target_seconds as the reference; the source converted by the dual AR model
with a fixed `delay` (frames of look-ahead) and the speaker vectors mixed with noise by `alpha`.

Parts: content encoder, codec, dual AR model (pipeline.py), Spark-TTS timbre encoder (timbre.py), all
rebuilt here with the published key names; the CAM++ style vector comes from vpeval's `campplus`
encoder (vpeval-3dspeaker, 3D-Speaker's network) reading campplus_cn_common.bin from the same folder.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Anonymizer, Params, Voice
from vpeval.errors import ConfigError, MissingModelError
from vpeval.speakers import CorpusSpec


class StreamVoiceAnon(Anonymizer):
    """Stream-Voice-Anon: streaming neural-codec language-model voice conversion to a random pool target."""

    name: ClassVar[str] = "stream-voice-anon"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None
    device_sensitive: ClassVar[bool] = True

    class Params(Params):
        """Model folder, target pool and the recipe's settings (defaults: seed 000's paper)."""

        model_dir: str | None = Field(
            None,
            description="Local copy of the Hugging Face repository Plachta/StreamVoiceAnon (pretrained_checkpoints/: "
            "dual_ar_delay_0_8.pth, asr_s2s_bsq_8192_causal_down_whisper.pth, "
            "firefly-gan-vq-fsq-8x1024-21hz-generator.pth, campplus_cn_common.bin, spark_speaker_encoder.pth).",
        )
        config_dir: str | None = Field(
            None,
            description="Optional folder laid out like the repository's configs/hydra_arcs (vc/, speech_tokenizers/, "
            "vocoders/ YAML, read as data); unset or empty: the published architecture.",
        )
        pool: CorpusSpec = Field(
            description="Target pool corpus {use, params}; the paper: LibriSpeech train-clean-360 + train-other-500."
        )
        min_target_seconds: float = Field(
            4.0, ge=0.0, le=600.0, description="Only pool utterances longer than this are references (paper: 4 s)."
        )
        target_draw: Literal["speaker", "utterance"] = Field(
            "speaker",
            description="speaker: a target speaker uniformly, then one of its long utterances (the paper draws "
            "a target speaker); utterance: any long utterance uniformly.",
        )
        delay: int = Field(2, ge=0, le=8, description="Frames of look-ahead of the dual AR model (paper: 2).")
        alpha: float = Field(
            1.0, ge=0.0, le=1.0, description="Speaker-vector noise mixing: 1 = the target's vectors (paper: 1)."
        )
        max_prompt_frames: int = Field(
            256, ge=1, le=1000, description="Reference frames kept as the prompt (21.5 per second; published 256)."
        )
        buffer_frames: int = Field(
            32, ge=0, le=512, description="Converted frames kept in the prompt when a long input refills it (32)."
        )
        temperature: float = Field(0.7, gt=0.0, le=5.0, description="Sampling temperature (published 0.7).")
        top_p: float = Field(0.7, gt=0.0, le=1.0, description="Nucleus sampling mass (published 0.7).")

        @field_validator("config_dir")
        @classmethod
        def _empty_is_unset(cls, value: str | None) -> str | None:
            # an experiment file's variable cannot be null and optional at once: its empty default means unset
            return value or None

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        from vpeval_streamvoiceanon.layout import missing_files

        return missing_files(params.model_dir, params.config_dir)

    def input_fingerprint(self) -> str | None:
        """The contents of the checkpoints and configs: other weights in the same folder make a new cache entry."""
        import hashlib
        from pathlib import Path

        from vpeval.data.fingerprint import FileIndex, file_hash
        from vpeval_streamvoiceanon.layout import CONFIGS, MODEL_FILES

        p = self.params
        if not p.model_dir:
            return None
        paths = [Path(p.model_dir).expanduser() / name for name in MODEL_FILES]
        if p.config_dir:
            paths += [Path(p.config_dir).expanduser() / rel for rel in CONFIGS]
        cache_root = self.context.options.get("cache_root")
        index = FileIndex(Path(cache_root) / "fingerprints") if cache_root else None
        try:
            rows = [f"{path.name}:{index.file_hash(path) if index else file_hash(path)}" for path in paths]
        finally:
            if index:
                index.close()
        return hashlib.sha256("\n".join(rows).encode()).hexdigest()

    def prepare(self) -> None:
        if getattr(self, "_pipeline", None) is not None:
            return
        from pathlib import Path

        from vpeval_streamvoiceanon.layout import STYLE_FILE
        from vpeval_streamvoiceanon.pipeline import Pipeline, Settings, load_timbre
        from vpeval_streamvoiceanon.targets import TargetPool

        p = self.params
        missing = self.missing_paths(p)
        if missing:
            raise MissingModelError(missing[0])
        self.context.apply_threads()
        device = self.context.device
        self._pipeline = Pipeline.load(p.model_dir, p.config_dir, device)
        self._timbre = load_timbre(p.model_dir, p.config_dir, device)
        if self._timbre.config.latent_dim != self._pipeline.lm.config.context_dim:
            raise ConfigError(
                f"stream-voice-anon: the timbre encoder makes {self._timbre.config.latent_dim}-dim latents and the "
                f"conversion model reads {self._pipeline.lm.config.context_dim}; the folder mixes two models."
            )
        self._style_source = str(Path(p.model_dir).expanduser() / STYLE_FILE)
        self._style = None
        corpus = self.context.get("corpus", p.pool.use, dict(p.pool.params)).load()
        self._targets = TargetPool.build(corpus.utterances, p.min_target_seconds, p.pool.use)
        self._settings = Settings(p.delay, p.alpha, p.max_prompt_frames, p.buffer_frames, p.temperature, p.top_p)

    def style_vector(self, reference_16k: np.ndarray) -> np.ndarray:
        """CAM++ of the reference (16 kHz), by vpeval's campplus encoder on campplus_cn_common.bin."""
        if self._style is None:
            self._style = self.context.get("encoder", "campplus", {"source": self._style_source})
        vector = np.asarray(self._style.embed(reference_16k), dtype=np.float32)
        want = self._pipeline.lm.config.style_dim
        if vector.shape != (want,):
            raise ConfigError(
                f"stream-voice-anon: {self._style_source} gives {vector.shape[-1]}-dim style vectors and the "
                f"conversion model reads {want}."
            )
        return vector

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        import torch

        from vpeval.audio import resample

        self.prepare()
        exclude = voice.utterance.speaker if voice.utterance is not None else None
        target = self._targets.draw(voice.rng, exclude, self.params.target_draw)  # the pseudo-speaker, drawn first
        seed = int(voice.rng.integers(2**62))
        rate = self._pipeline.sample_rate
        timbre_rate = self._timbre.config.sample_rate
        reference = target.load(rate)
        reference_16k = target.load(timbre_rate)
        style = torch.from_numpy(self.style_vector(reference_16k))
        device = self._pipeline.device
        timbre = self._timbre.latents(torch.from_numpy(reference_16k)[None].to(device))[0]
        generator = torch.Generator(device=device).manual_seed(seed)
        source = torch.from_numpy(resample(np.asarray(audio, dtype=np.float32), sample_rate, rate))
        converted = self._pipeline.convert(
            source, torch.from_numpy(reference), style, timbre, self._settings, generator, self.context.autocast
        )
        out = resample(converted.cpu().numpy().astype(np.float32), rate, sample_rate)
        fitted = np.zeros(len(audio), dtype=np.float32)
        fitted[: min(len(out), len(audio))] = out[: len(audio)]
        self.context.log.debug("stream-voice-anon %s: target %s (%s)", voice.key, target.id, target.speaker)
        return fitted
