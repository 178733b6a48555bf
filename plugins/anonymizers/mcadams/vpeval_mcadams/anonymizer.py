"""The McAdams anonymizer plugin class: VoicePrivacy 2024's baseline B2 by default (alpha drawn per voice,
full-scale output); fixed alpha 0.8 at the input's peak gives the VPC 2020/2022 variant."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from vpeval.api import Anonymizer, Params, Voice
from vpeval_mcadams.transform import mcadams

ALPHA_MIN, ALPHA_MAX = 0.2, 2.0


# VPC 2024's B2 writes each file as int16 samples x / max|x| * (2**15 - 2) and reads int16 back as / 2**15.
FULL_SCALE_PEAK = (2**15 - 2) / 2**15
VPC2024_ALPHA_RANGE = (0.5, 0.9)


class McAdams(Anonymizer):
    """McAdams-coefficient anonymization: LPC pole angles raised to alpha (VoicePrivacy B2)."""

    name: ClassVar[str] = "mcadams"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None

    class Params(Params):
        """McAdams settings; defaults are VoicePrivacy 2024's B2 (alpha ~ U[0.5, 0.9], full-scale output)."""

        # Pole angles phi in (0, pi] become phi ** alpha: alpha = 1 is the identity; far below 0.2 every
        # formant collapses to about 1 rad, far above 2 they split to 0 and pi (clipped). VPC uses 0.5-0.9.
        alpha: float | None = Field(
            None,
            ge=ALPHA_MIN,
            le=ALPHA_MAX,
            description=f"Fixed McAdams coefficient in [{ALPHA_MIN}, {ALPHA_MAX}] for every voice (VPC 2020/2022 "
            "B2: 0.8); complex pole angles phi become phi ** alpha. Set it instead of alpha_range.",
        )
        alpha_range: tuple[
            Annotated[float, Field(ge=ALPHA_MIN, le=ALPHA_MAX)], Annotated[float, Field(ge=ALPHA_MIN, le=ALPHA_MAX)]
        ] = Field(
            VPC2024_ALPHA_RANGE,
            description="[low, high]: alpha drawn uniformly per voice (VPC 2024 B2: [0.5, 0.9]); at speaker "
            "level every utterance of a speaker gets the same alpha. Ignored when alpha is set.",
        )
        # Windows of at least 5 ms hold 40 samples at 8 kHz, more than the highest LPC order allowed.
        win_ms: float = Field(
            20.0, ge=5.0, le=200.0, description="Analysis window length in ms (VPC B2 winLengthinms)."
        )
        shift_ms: float = Field(
            10.0, ge=1.0, le=200.0, description="Hop between frames in ms, at most win_ms (VPC B2 shiftLengthinms)."
        )
        lp_order: int = Field(20, ge=2, le=32, description="LPC order of the Burg analysis (VPC B2 lp_order).")
        output_level: Literal["full-scale", "input-peak", "unscaled"] = Field(
            "full-scale",
            description="Peak of each output file: 'full-scale' (VPC 2024 B2: (2^15 - 2) / 2^15), 'input-peak' "
            "(the input's peak: loudness unchanged), 'unscaled' (the transform's own level).",
        )

        @field_validator("alpha_range")
        @classmethod
        def _ordered(cls, value):
            if value[0] > value[1]:
                raise ValueError(f"alpha_range must be [low, high] with low <= high, got {list(value)}; swap them")
            return value

        @field_validator("shift_ms")
        @classmethod
        def _hop_within_window(cls, value, info):
            win = info.data.get("win_ms")
            if win is not None and value > win:
                raise ValueError(f"shift_ms ({value}) must not exceed win_ms ({win})")
            return value

        @model_validator(mode="after")
        def _one_alpha_setting(self):
            # Judged by value, not by model_fields_set: resolved.yaml and the runner read every field back
            # from the dump, where alpha_range always appears (at its default when alpha is set).
            if self.alpha is not None and tuple(self.alpha_range) != VPC2024_ALPHA_RANGE:
                raise ValueError("set either alpha (one fixed value) or alpha_range (drawn per voice), not both")
            return self

    def alpha_for(self, voice: Voice) -> float:
        """The voice's McAdams coefficient: the fixed alpha, or one drawn from voice.rng first."""
        if self.params.alpha is not None:
            return self.params.alpha
        low, high = self.params.alpha_range
        return float(voice.rng.uniform(low, high))

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        alpha = self.alpha_for(voice)
        audio = np.asarray(audio, dtype=np.float32)
        out = mcadams(
            audio,
            sample_rate,
            alpha=alpha,
            win_ms=self.params.win_ms,
            shift_ms=self.params.shift_ms,
            order=self.params.lp_order,
        )
        return np.nan_to_num(scale_to_level(out, audio, self.params.output_level)).astype(np.float32)


def scale_to_level(out: np.ndarray, audio: np.ndarray, level: str) -> np.ndarray:
    """`out` scaled so its peak is full scale (VPC 2024) or the input's peak; unchanged when 'unscaled'."""
    peak = float(np.max(np.abs(out)))
    if level == "unscaled" or peak == 0:
        return out
    target = FULL_SCALE_PEAK if level == "full-scale" else float(np.max(np.abs(audio)))
    return out * (target / peak)
