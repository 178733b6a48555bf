"""The McAdams anonymizer plugin class (VoicePrivacy baseline B2; VPC 2024 draws alpha per utterance)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field, model_validator

from vpeval.api import Anonymizer, Params, Voice
from vpeval.errors import BadAudioError, ConfigError

from vpeval_mcadams.transform import mcadams


class McAdams(Anonymizer):
    """McAdams-coefficient anonymization: LPC pole angles raised to alpha (VoicePrivacy B2)."""

    name: ClassVar[str] = "mcadams"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None

    class Params(Params):
        """McAdams settings; defaults are the VoicePrivacy B2 recipe."""

        alpha: float = Field(
            0.8, gt=0.0, description="McAdams coefficient: complex pole angles phi become phi ** alpha (VPC B2: 0.8)."
        )
        alpha_range: tuple[float, float] | None = Field(
            None,
            description="If set, alpha is drawn uniformly from [low, high] per voice instead "
            "(VPC 2024 B2: [0.5, 0.9]); at speaker level every utterance of a speaker gets the same alpha.",
        )
        win_ms: float = Field(20.0, gt=0.0, description="Analysis window length in ms (VPC B2 winLengthinms).")
        shift_ms: float = Field(10.0, gt=0.0, description="Hop between frames in ms (VPC B2 shiftLengthinms).")
        lp_order: int = Field(20, ge=2, description="LPC order of the Burg analysis (VPC B2 lp_order).")
        normalize: bool = Field(
            True,
            description="Scale the output to the input's peak amplitude (VPC B2 scales to peak 1.0; keeping "
            "the input's level leaves loudness unchanged for the attacker and the ASR).",
        )

        @model_validator(mode="after")
        def _check(self):
            if self.alpha_range is not None:
                low, high = self.alpha_range
                if not 0.0 < low <= high:
                    raise ConfigError(
                        f"mcadams alpha_range {list(self.alpha_range)} must be [low, high] with 0 < low <= high."
                    )
            if self.shift_ms > self.win_ms:
                raise ConfigError(f"mcadams shift_ms {self.shift_ms} must not exceed win_ms {self.win_ms}.")
            return self

    def alpha_for(self, voice: Voice) -> float:
        """The voice's McAdams coefficient, drawn from voice.rng first when a range is set."""
        if self.params.alpha_range is None:
            return self.params.alpha
        low, high = self.params.alpha_range
        return float(voice.rng.uniform(low, high))

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        alpha = self.alpha_for(voice)
        audio = np.asarray(audio, dtype=np.float32)
        if audio.ndim != 1:
            raise BadAudioError(voice.key, f"mcadams needs mono audio, got shape {audio.shape}")
        if len(audio) == 0:
            return audio.copy()
        out = mcadams(
            audio,
            sample_rate,
            alpha=alpha,
            win_ms=self.params.win_ms,
            shift_ms=self.params.shift_ms,
            order=self.params.lp_order,
        )
        if self.params.normalize:
            peak = float(np.max(np.abs(out)))
            out = out * (float(np.max(np.abs(audio))) / peak) if peak > 0 else out
        return np.nan_to_num(out).astype(np.float32)
