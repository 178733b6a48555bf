"""Emotion-like speaking styles: pitch level and range, rate and intensity (espeak-ng parameters)."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Style:
    pitch: int  # espeak-ng pitch parameter offset from 50 (the voice's own level)
    pitch_range: int  # espeak-ng range parameter (50 = the voice's own)
    rate: float  # factor on the speaker's rate
    volume: int  # espeak-ng volume, percent
    tilt: float  # spectral tilt added (positive = brighter, pressed voice)

    def scaled(self, strength: float) -> Style:
        """This style with every offset from neutral multiplied by strength (1 = unchanged)."""
        if strength == 1.0:  # exactly self, so default corpora keep their bytes
            return self
        base = NEUTRAL
        return replace(
            self,
            pitch=round(base.pitch + strength * (self.pitch - base.pitch)),
            pitch_range=round(base.pitch_range + strength * (self.pitch_range - base.pitch_range)),
            rate=base.rate + strength * (self.rate - base.rate),
            volume=round(base.volume + strength * (self.volume - base.volume)),
            tilt=base.tilt + strength * (self.tilt - base.tilt),
        )


NEUTRAL = Style(pitch=0, pitch_range=50, rate=1.0, volume=100, tilt=0.0)


STYLES: dict[str, Style] = {
    "neutral": NEUTRAL,
    "happy": Style(pitch=7, pitch_range=80, rate=1.08, volume=110, tilt=0.15),
    "sad": Style(pitch=-6, pitch_range=20, rate=0.84, volume=80, tilt=-0.3),
    "angry": Style(pitch=4, pitch_range=70, rate=1.12, volume=130, tilt=0.35),
}
