"""ssl-sas: speak an utterance's content with a pseudo-speaker vector through the SSL-SAS generator.

1. the source's speaker vector x (`encoder`; default: the release's own ECAPA-TDNN, `ssl-sas-ecapa`),
   anonymized by the embedding anonymizer named in `anonymizer` (selection, ohnn, emotion-compensation,
   reached through the core) to z, drawing from the voice's rng;
2. the release's features of the source: soft-HuBERT content logits (50 Hz) and YAAPT F0 (100 Hz);
3. content and z each normalised over the utterance, content repeated to 100 Hz, [content; F0; z]
   frames into the conditioned HiFi-GAN (x 160 samples per frame): 16 kHz speech.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Anonymizer, Params, PluginRef, Voice
from vpeval.errors import ConfigError, DataError, MissingModelError
from vpeval.speakers import POOL_SEED, CorpusSpec, EncoderSpec, embedding_anonymizer_in_space, speaker_vector
from vpeval_sslsas import layout

DEFAULT_POOL = {"preset": "tiny", "speakers": 20, "seed": POOL_SEED}
MIN_SAMPLES = 3200  # 0.2 s at 16 kHz: shorter input is zero-padded for analysis (HuBERT needs 400 samples)


class SslSas(Anonymizer):
    """Speech from a pseudo-speaker vector with the SSL-SAS generator (soft HuBERT + YAAPT F0 + ECAPA HiFi-GAN)."""

    name: ClassVar[str] = "ssl-sas"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None
    device_sensitive: ClassVar[bool] = True

    class Params(Params):
        """The release folder, the embedding anonymizer and its space."""

        model: str = Field(
            description="The SSL-SAS release folder (pretrained_models_anon_xv: HiFi-GAN/<model_type>/{config.json, "
            "g_*}, HuBERT_soft/soft_model.pt, ECAPA-TDNN/embedding_model.ckpt). Never downloaded."
        )
        model_type: str = Field(
            layout.DEFAULT_MODEL_TYPE,
            description="Subfolder of HiFi-GAN/ (libri_tts_clean_100_fbank_xv_ssl_freeze: the English model).",
        )
        checkpoint: str | None = Field(
            None,
            description="The g_ file's name in that subfolder; default: the last g_* by name, as the release picks.",
        )
        anonymizer: Annotated[str, PluginRef("anonymizer", params="anonymizer_params", works_on="embedding")] = Field(
            "selection",
            description="Embedding anonymizer giving the pseudo-speaker vector (selection: the release's "
            "VPC B1 rule; ohnn; emotion-compensation).",
        )
        anonymizer_params: dict[str, Any] = Field(
            default_factory=dict, description="Its parameters; pool and encoder default to this plugin's."
        )
        pool: CorpusSpec = Field(
            default_factory=lambda: CorpusSpec(use="synth", params=dict(DEFAULT_POOL)),
            description="Pool corpus {use, params} for an anonymizer that has one (selection: the release used "
            "LibriTTS train-other-500), speaker-disjoint from the evaluation data.",
        )
        encoder: EncoderSpec | None = Field(
            None,
            description="Speaker encoder {use, params} of the vector space; default: ssl-sas-ecapa on `model` "
            "(the release's ECAPA-TDNN, whose vectors the generator was trained on).",
        )
        output_level: Literal["full-scale", "source-peak"] = Field(
            "full-scale",
            description="full-scale: peak 1.0, as the release writes its output (librosa.util.normalize); "
            "source-peak: the input's peak.",
        )

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        return layout.missing_paths(params.model, params.model_type, params.checkpoint, params.encoder is None)

    def encoder_spec(self) -> EncoderSpec:
        p = self.params
        return p.encoder if p.encoder is not None else EncoderSpec(use="ssl-sas-ecapa", params={"model": p.model})

    def input_fingerprint(self) -> str:
        """The contents of the files the output depends on: generator, config, content encoder, ECAPA."""
        from vpeval.data.fingerprint import file_hash

        p = self.params
        layout.require(p.model, p.model_type, p.checkpoint, p.encoder is None)
        root = Path(p.model).expanduser()
        files = [
            layout.hifigan_folder(root, p.model_type) / layout.CONFIG,
            layout.generator_checkpoint(root, p.model_type, p.checkpoint),
            root / layout.SOFT_MODEL,
        ]
        if p.encoder is None:
            files.append(root / layout.ECAPA)
        return "+".join(file_hash(f) for f in files)

    # -- loading ---------------------------------------------------------------------------------------
    def prepare(self) -> None:
        if getattr(self, "_generator", None) is not None:
            return
        p = self.params
        layout.require(p.model, p.model_type, p.checkpoint, p.encoder is None)
        self.context.apply_threads()
        self._content, self._generator, self.speaker_dim = load_release(
            p.model, p.model_type, p.checkpoint, self.context.device
        )
        spec = self.encoder_spec()
        self._encoder = self.context.get("encoder", spec.use, dict(spec.params))
        self._pseudo = embedding_anonymizer_in_space(
            self.context,
            p.anonymizer,
            p.anonymizer_params,
            p.pool,
            spec,
            f"ssl-sas anonymizer '{p.anonymizer}' does not work on speaker embeddings; name an embedding "
            "anonymizer such as selection, ohnn or emotion-compensation.",
        )
        self._pseudo.prepare()

    # -- one utterance ---------------------------------------------------------------------------------
    def embed(self, audio: np.ndarray, rate: int) -> np.ndarray:
        return speaker_vector(self._encoder, audio, rate)

    def requested_vector(self, audio: np.ndarray, rate: int, voice: Voice) -> np.ndarray:
        """The pseudo-speaker vector the embedding anonymizer makes from the source's vector."""
        return self._pseudo.anonymize_embeddings(self.embed(audio, rate)[None], [voice])[0]

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        from vpeval.audio import resample

        self.prepare()
        audio = np.asarray(audio, dtype=np.float32)
        vector = self.requested_vector(audio, sample_rate, voice)
        out = self.speak(resample(audio, sample_rate, 16000), vector)
        out = resample(out, 16000, sample_rate)
        fitted = np.zeros(len(audio), dtype=np.float32)
        fitted[: min(len(out), len(audio))] = out[: len(audio)]
        peak = float(np.max(np.abs(fitted))) if fitted.size else 0.0
        if peak > 0:
            target = 1.0 if self.params.output_level == "full-scale" else float(np.max(np.abs(audio)))
            fitted *= target / peak
        return fitted

    def speak(self, audio16: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """16 kHz audio's content spoken with `vector` by the generator: 16 kHz audio of the same length
        (the release's output covers whole 20 ms frames; the remainder is silence), before any level."""
        self.prepare()
        return synthesize(self._content, self._generator, audio16, vector, self.speaker_dim, self.context)


def load_release(model: str, model_type: str, checkpoint: str | None, device: str = "cpu"):
    """(soft content encoder, HiFi-GAN, speaker dimension) of a release folder, on `device`, eval mode."""
    from vpeval.torchload import load_weights_only
    from vpeval_sslsas.content import load_soft_encoder
    from vpeval_sslsas.features import F0_HOP
    from vpeval_sslsas.generator import Generator, GeneratorConfig

    root = Path(model).expanduser()
    config_path = layout.hifigan_folder(root, model_type) / layout.CONFIG
    config = layout.read_config(config_path)
    layout.check_variant(config, config_path)
    try:
        shape = GeneratorConfig.from_json(config)
    except (KeyError, TypeError, ValueError) as exc:
        raise MissingModelError(f"{config_path}: not a HiFi-GAN config ({type(exc).__name__}: {exc}).") from None
    if shape.hop != F0_HOP:
        raise MissingModelError(
            f"{config_path}: upsample_rates multiply to {shape.hop}, not {F0_HOP} (one 10 ms F0 frame at 16 kHz)."
        )
    g_path = layout.generator_checkpoint(root, model_type, checkpoint)
    g_file = layout.read_generator_file(g_path)
    # What the release's inference runs: the g_ file's latent_encoder (it overrides soft_model.pt, whose
    # weights it holds frozen); soft_model.pt when the g_ file was saved without it.
    if g_file.content:
        content = load_soft_encoder(g_file.content, layout.CONTENT_PREFIX, g_path)
    else:
        soft_path = root / layout.SOFT_MODEL
        try:
            soft = load_weights_only(soft_path)
        except MissingModelError as exc:
            raise MissingModelError(
                f"{str(exc).rstrip('.')}; {layout.EXPORT_HINT.replace('FILE', str(soft_path))}."
            ) from None
        content = load_soft_encoder(soft if isinstance(soft, dict) else {}, "", soft_path)
    generator = Generator(shape)
    speaker_dim = shape.model_in_dim - content.units - 1
    if speaker_dim <= 0:
        raise MissingModelError(
            f"{config_path}: model_in_dim {shape.model_in_dim} leaves no room for a speaker vector next to "
            f"{content.units} content units and F0."
        )
    try:
        generator.load_state_dict(g_file.generator, strict=True)
    except RuntimeError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        detail = lines[1] if len(lines) > 1 else lines[0]
        raise MissingModelError(f"{g_path}: the generator weights do not fit its config.json: {detail}") from None
    content = content.eval().requires_grad_(False).to(device)
    generator = generator.eval().requires_grad_(False).to(device)
    return content, generator, speaker_dim


def synthesize(
    content_encoder, generator, audio16: np.ndarray, vector: np.ndarray, speaker_dim: int, context
) -> np.ndarray:
    """The release's gen_vpc on one utterance: float32 16 kHz audio of len(audio16) samples."""
    import torch

    from vpeval_sslsas.features import generator_input, prepare_audio, yaapt_f0

    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    if vector.shape[0] != speaker_dim:
        raise ConfigError(
            f"ssl-sas: the speaker encoder gives {vector.shape[0]}-d vectors where the generator takes "
            f"{speaker_dim}-d ones; use the release's ECAPA-TDNN (the default encoder)."
        )
    padded = np.zeros(max(len(audio16), MIN_SAMPLES), dtype=np.float32)
    padded[: len(audio16)] = audio16
    wave = prepare_audio(padded)
    f0 = yaapt_f0(wave)
    device = context.device
    with torch.no_grad():
        wav = torch.from_numpy(wave).to(device)[None]
        with context.autocast():
            logits = content_encoder(wav)
        try:
            frames = generator_input(
                logits.float(),
                torch.from_numpy(f0).to(device)[None, None],
                torch.from_numpy(vector).to(device),
            )
        except ValueError as exc:  # the release's _upsample has no rule for it either
            raise DataError(
                f"ssl-sas: {logits.shape[1] + 1} content frames and {len(f0)} F0 frames for {len(wave)} samples: {exc}."
            ) from None
        with context.autocast():
            out = generator(frames)
    out = out.float().reshape(-1).cpu().numpy()
    result = np.zeros(len(audio16), dtype=np.float32)
    n = min(len(out), len(audio16))
    result[:n] = out[:n]
    return result
