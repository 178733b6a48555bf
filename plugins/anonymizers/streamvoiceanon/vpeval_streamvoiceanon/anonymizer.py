"""stream-voice-anon: Stream-Voice-Anon (Kuzmin et al., ICASSP 2026) from the published checkpoints.

Per utterance (seed 000's recipe): a target speaker drawn with the voice's rng from the pool, one of its
utterances longer than min_target_seconds as the reference; the source converted by the dual AR model
with a fixed `delay` (frames of look-ahead) and the speaker vectors mixed with noise by `alpha`.

Built here: the content encoder, the codec, the dual AR model and its generation, the target choice and
the noise mixing (pipeline.py). Not built: the Spark-TTS timbre encoder (spark_speaker_encoder.pth), which
makes the 32 timbre latents of the speaker prompt; until it is, the anonymizer refuses before converting
anything rather than speak with made-up latents.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Anonymizer, Params, Voice
from vpeval.errors import MissingModelError, PluginError
from vpeval.speakers import CorpusSpec

NOT_BUILT = (
    "stream-voice-anon cannot convert yet: the Spark-TTS timbre encoder (spark_speaker_encoder.pth: ECAPA-TDNN, "
    "perceiver resampler and FSQ, making the 32 timbre latents of the speaker prompt) is not built in this "
    "plugin, and the dual AR model is never run with substitute latents."
)


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
            "vocoders/ YAML, read as data); unset: the published architecture.",
        )
        pool: CorpusSpec = Field(
            description="Target pool corpus {use, params}; the paper: LibriSpeech train-clean-360 + train-other-500."
        )
        min_target_seconds: float = Field(
            4.0, ge=0.0, le=600.0, description="Only pool utterances longer than this are references (paper: 4 s)."
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

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        from vpeval_streamvoiceanon.layout import missing_files

        return missing_files(params.model_dir, params.config_dir)

    def prepare(self) -> None:
        missing = self.missing_paths(self.params)
        if missing:
            raise MissingModelError(missing[0])
        raise PluginError(NOT_BUILT)

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        self.prepare()
        raise PluginError(NOT_BUILT)  # unreachable: prepare refuses; kept so no path converts
