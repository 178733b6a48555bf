"""The one audio gate, at every boundary: the corpus scan (vpeval.data.scan) judges input files with
`audio_problem`, the anonymize task what each anonymizer returns with `gate_output` (for `precomputed`, a
submission's file as stored). docs/data.md says what it refuses and why. Samples pass exact or are refused."""

from __future__ import annotations

import numpy as np

from vpeval.audio import MAX_RATE, MIN_RATE, measure_samples  # MIN/MAX_RATE: for headers and output_rate alike
from vpeval.errors import BadAudioError, PluginError

MIN_SECONDS = 0.1  # shorter than one syllable: no speaker or speech information to score
SILENCE_DBFS = -80.0  # RMS below this is silence (16-bit dither alone is about -101 dBFS)
FULL_SCALE = 1.0  # samples beyond it would be clipped by every 16-bit copy


def audio_problem(measures: dict, full_scale: bool = True, silence_allowed: bool = False) -> str | None:
    """Why measured audio cannot be scored as speech (one clause), or None when it can. `measures`: of
    vpeval.audio's measure_audio or measure_samples. `full_scale`: refuse samples beyond +-1, which a 16-bit
    copy would clip (False where audio is stored as float). `silence_allowed`: an anonymizer's declared answer."""
    if measures["nonfinite"]:
        return f"it contains {measures['nonfinite']} NaN or infinite samples"
    seconds = measures["frames"] / measures["sample_rate"]
    if seconds < MIN_SECONDS:
        return f"it lasts {seconds:.3g} s, shorter than the {MIN_SECONDS:g} s minimum for a scorable utterance"
    if measures["peak"] == 0.0:
        return None if silence_allowed else "every sample is zero (digital silence)"
    mean = measures.get("mean", 0.0)  # the level around the mean: a constant (DC) level holds no speech either
    level = 10 * np.log10(max(measures["rms"] ** 2 - mean**2, 0.0) or 1e-300)
    if level < SILENCE_DBFS:
        if 20 * np.log10(abs(mean) or 1e-300) >= SILENCE_DBFS:
            return f"it is a constant level of {mean:.3g} (DC) with no signal on it"
        silent = f"it is silent (RMS level {max(level, -999):.0f} dBFS, below the {SILENCE_DBFS:g} dBFS floor)"
        return None if silence_allowed else silent
    if full_scale and measures["peak"] > FULL_SCALE:
        return (
            f"its samples peak at {measures['peak']:.3g}, beyond full scale ({FULL_SCALE:g}), so every 16-bit copy "
            "would clip it; scale the audio into [-1, 1]"
        )
    return None


def gate_output(audio, rate, input_seconds: float, step, utt) -> np.ndarray:
    """What the anonymizer `step` returned for `utt` (at `rate`, for `input_seconds` of input) as float32 when the
    gate passes it; else one sentence naming the stored file (`Anonymizer.stored_file`) or the plugin's bug."""
    if (problem := output_problem(audio, rate, input_seconds, step)) is None:
        return np.asarray(audio, dtype=np.float32)
    if (stored := step.stored_file(utt)) is not None:
        raise BadAudioError(stored, f"{problem} (anonymizer {step.name}'s speech for utterance {utt.id})")
    raise PluginError(
        f"anonymizer {step.name}'s output for utterance {utt.id} cannot be used: {problem}; this is a bug in "
        f"{step.distribution} {step.version}: report it to its authors."
    )


def output_problem(audio, rate, input_seconds: float, step) -> str | None:
    kind = getattr(getattr(audio, "dtype", None), "kind", None)
    if kind != "f" or (got := _not_mono(audio)):
        got = got if kind == "f" else f"{audio.dtype} samples" if kind else f"a {type(audio).__name__}"
        return f"it is {got}, where an anonymizer returns mono float32 audio with samples"
    if not isinstance(rate, (int, np.integer)) or not MIN_RATE <= rate <= MAX_RATE:
        return f"its declared rate (output_rate) is {rate!r} Hz, outside {MIN_RATE} to {MAX_RATE} Hz"
    problem = audio_problem(measure_samples(audio, int(rate)), step.output_subtype != "FLOAT", step.silence_allowed)
    low, high = step.duration_band or (0.0, np.inf)
    if problem is None and not low <= (ratio := len(audio) / rate / input_seconds) <= high:
        return (
            f"it lasts {len(audio) / rate:.3g} s for {input_seconds:.3g} s of input ({ratio:.3g} times), outside the "
            f"{low:g} to {high:g} times its class declares (Anonymizer.duration_band)"
        )
    return problem


def require_mono(audio: np.ndarray, utt) -> None:
    """A loaded input is mono with samples (the scan judged its file; a plugin's loader may not mix down)."""
    if got := _not_mono(audio):
        raise BadAudioError(utt.path, f"it reads as {got}, and an anonymizer takes mono audio with samples")


def _not_mono(audio) -> str | None:
    if np.ndim(audio) != 1 or not np.size(audio):
        return f"audio of shape {np.shape(audio)}" if np.ndim(audio) != 1 else "no samples"
    return None
