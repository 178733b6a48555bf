"""Token-probe: a linear speaker probe on what a speech-token frontend exposes (seed 002's baseline)."""
