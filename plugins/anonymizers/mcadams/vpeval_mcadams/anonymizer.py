"""The McAdams anonymizer plugin class (VoicePrivacy baseline B2; VPC 2024 draws alpha per utterance)."""

from __future__ import annotations

from typing import Annotated, ClassVar

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Anonymizer, Params, Voice
from vpeval.errors import BadAudioError

from vpeval_mcadams.transform import mcadams

ALPHA_MIN, ALPHA_MAX = 0.2, 2.0


class McAdams(Anonymizer):
    """McAdams-coefficient anonymization: LPC pole angles raised to alpha (VoicePrivacy B2)."""

    name: ClassVar[str] = "mcadams"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None

    class Params(Params):
        """McAdams settings; defaults are the VoicePrivacy B2 recipe."""

        # Pole angles phi in (0, pi] become phi ** alpha: alpha = 1 is the identity; far below 0.2 every
        # formant collapses to about 1 rad, far above 2 they split to 0 and pi (clipped). VPC uses 0.5-0.9.
        alpha: float = Field(
            0.8, ge=ALPHA_MIN, le=ALPHA_MAX,
            description=f"McAdams coefficient in [{ALPHA_MIN}, {ALPHA_MAX}]: complex pole angles phi become "
            "phi ** alpha (VPC B2: 0.8).",
        )
        alpha_range: tuple[Annotated[float, Field(ge=ALPHA_MIN, le=ALPHA_MAX)],
                           Annotated[float, Field(ge=ALPHA_MIN, le=ALPHA_MAX)]] | None = Field(
            None,
            description="If set, alpha is drawn uniformly from [low, high] per voice instead "
            "(VPC 2024 B2: [0.5, 0.9]); at speaker level every utterance of a speaker gets the same alpha.",
        )
        # Windows of at least 5 ms hold 40 samples at 8 kHz, more than the highest LPC order allowed.
        win_ms: float = Field(20.0, ge=5.0, le=200.0, description="Analysis window length in ms (VPC B2 winLengthinms).")
        shift_ms: float = Field(10.0, ge=1.0, le=200.0, description="Hop between frames in ms, at most win_ms (VPC B2 shiftLengthinms).")
        lp_order: int = Field(20, ge=2, le=32, description="LPC order of the Burg analysis (VPC B2 lp_order).")
        normalize: bool = Field(
            True,
            description="Scale the output to the input's peak amplitude (VPC B2 scales to peak 1.0; keeping "
            "the input's level leaves loudness unchanged for the attacker and the ASR).",
        )

        @field_validator("alpha_range")
        @classmethod
        def _ordered(cls, value):
            if value is not None and value[0] > value[1]:
                raise ValueError(f"alpha_range must be [low, high] with low <= high, got {list(value)}; swap them")
            return value

        @field_validator("shift_ms")
        @classmethod
        def _hop_within_window(cls, value, info):
            win = info.data.get("win_ms")
            if win is not None and value > win:
                raise ValueError(f"shift_ms ({value}) must not exceed win_ms ({win})")
            return value

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
