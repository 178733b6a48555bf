"""asr-tts: recognise the words, then speak them again in a pseudo-voice (VoicePrivacy B3 in spirit).

1. draw the pseudo-voice from the voice's rng first (gender group, F0, intonation width, vocal-tract
   scale and formant detail, speaking rate: voice.py);
2. an ASR plugin (default: the packaged Whisper tiny.en) transcribes the source, with word times;
3. espeak-ng speaks the text in the pseudo-voice; with `match_duration` the speaking rate is set so
   the speech lasts as long as the source's speech did (its loud frames, the first word's start from
   the ASR's word times) and starts where it started;
4. resampled to the input rate, placed in a buffer of the input's length (squeezed in time only if
   it is still longer than the input), scaled to the input's peak.

Nothing of the source's voice reaches the output except the words and their overall timing. Speech the
ASR finds no words in becomes silence.

Meyer et al., "Speaker anonymization with phonetic intermediate representations", Interspeech 2022,
and the VoicePrivacy 2024 baseline B3 (Tomashenko et al., VPC 2024 evaluation plan): ASR to a phonetic
or text representation, then TTS with an artificial speaker. Here the TTS is espeak-ng's formant
synthesizer (GPL-3.0) with a random voice file, the ASR any vpeval asr plugin.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Anonymizer, Params, PluginRef, Transcript, Voice
from vpeval_asr_tts.voice import PseudoVoice

MIN_WPM, MAX_WPM = 80.0, 400.0  # espeak-ng's useful speaking-rate range (words per minute)
# Fitting to the source never speeds speech beyond this: Whisper tiny.en lost most words of espeak-ng
# at about 250 wpm here; what is still too long is squeezed (pitch kept) only if it exceeds the input.
MAX_FIT_WPM = 220.0
SILENCE_RATIO = 0.01  # espeak-ng's lead-in and tail below 1 % of the peak are trimmed
LOUD_RATIO = 0.1  # source frames with an RMS 20 dB below the loudest count as silence
MIN_SPAN_SECONDS = 0.2  # shorter word spans (a clipped word) are not worth racing through

Rate = Annotated[float, Field(ge=MIN_WPM, le=MAX_WPM)]


class AsrTts(Anonymizer):
    """ASR + TTS anonymization: Whisper's words spoken by espeak-ng in a random pseudo-voice (VPC B3 in spirit)."""

    name: ClassVar[str] = "asr-tts"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = 16000
    silence_allowed: ClassVar[bool] = True  # no words heard: silence is the answer (speak_transcript)

    class Params(Params):
        """Which ASR, how pseudo-voices are drawn, and how the speech is fitted to the source."""

        asr: Annotated[str, PluginRef("asr", params="asr_params")] = Field(
            "whisper", description="ASR plugin that transcribes the source (default: Whisper tiny.en, packaged)."
        )
        asr_params: dict[str, Any] = Field(default_factory=dict, description="Parameters of that ASR plugin.")
        gender: Literal["random", "f", "m"] = Field(
            "random", description="Gender group of the pseudo-voices: drawn per voice with even odds, or fixed."
        )
        rate_wpm: tuple[Rate, Rate] = Field(
            (140.0, 175.0),
            description=f"Speaking rate of the pseudo-voice in words per minute, uniform in [low, high] "
            f"({MIN_WPM:g}-{MAX_WPM:g}); with match_duration it is only the first try.",
        )
        match_duration: bool = Field(
            True,
            description="Set the speaking rate so the synthetic speech spans the source's words (their Whisper "
            "timestamps) and start it where they start; off: the pseudo-voice's own rate, speech from the start.",
        )
        normalize: bool = Field(True, description="Scale the output to the input's peak amplitude.")

        @field_validator("rate_wpm")
        @classmethod
        def _ordered(cls, value):
            if value[0] > value[1]:
                raise ValueError(f"rate_wpm must be [low, high] with low <= high, got {list(value)}; swap them")
            return value

    _asr = None

    def prepare(self) -> None:
        # The ASR plugin loads its model on first use, so forked workers do not share a half-used one.
        if self._asr is None:
            self._asr = self.context.get("asr", self.params.asr, dict(self.params.asr_params))

    def pseudo_voice(self, voice: Voice) -> PseudoVoice:
        return PseudoVoice.draw(voice.rng, self.params.gender, self.params.rate_wpm)

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        from vpeval.audio import resample

        pseudo = self.pseudo_voice(voice)
        audio = np.asarray(audio, dtype=np.float32)
        self.prepare()
        transcript = self._asr.transcribe(resample(audio, sample_rate, self._asr.sample_rate))
        return self.speak_transcript(transcript, pseudo, audio, sample_rate)

    def speak_transcript(
        self, transcript: Transcript, pseudo: PseudoVoice, source: np.ndarray, rate: int
    ) -> np.ndarray:
        """The transcript spoken in the pseudo-voice: as many samples at `rate` as the source, its peak."""
        from vpeval.audio import resample

        length = len(source)
        out = np.zeros(length, dtype=np.float32)
        text = transcript.text.strip()
        if not re.search(r"\w", text):
            return out
        peak = float(np.max(np.abs(source)))
        start, span = speech_span(source, rate, transcript)
        speech, tts_rate = speak(text, pseudo, pseudo.rate_wpm)
        if self.params.match_duration:
            wpm = float(np.clip(pseudo.rate_wpm * (len(speech) / tts_rate) / span, MIN_WPM, MAX_FIT_WPM))
            speech, tts_rate = speak(text, pseudo, wpm)
        else:
            start = 0.0
        speech = resample(speech, tts_rate, rate)
        if len(speech) > length:
            speech = squeeze(speech, length)
        offset = min(int(round(start * rate)), length - len(speech))
        out[offset : offset + len(speech)] = speech
        top = float(np.max(np.abs(out)))
        if self.params.normalize and top > 0:
            out *= peak / top
        return np.nan_to_num(out).astype(np.float32)


def speech_span(audio: np.ndarray, rate: int, transcript: Transcript) -> tuple[float, float]:
    """(start, duration) in seconds that the synthetic speech should fill.

    From the later of the first loud 10 ms frame (20 dB below the loudest) and the first word's start
    (Whisper often starts the first word at 0 s), to the last loud frame (its last word often ends early).
    """
    seconds = len(audio) / rate
    hop = max(1, rate // 100)
    frames = len(audio) // hop
    if frames == 0:
        return 0.0, max(seconds, MIN_SPAN_SECONDS)
    rms = np.sqrt(np.mean(np.asarray(audio[: frames * hop], np.float64).reshape(frames, hop) ** 2, axis=1))
    loud = np.flatnonzero(rms > LOUD_RATIO * rms.max()) if rms.max() > 0 else np.arange(frames)
    start, end = loud[0] * hop / rate, (loud[-1] + 1) * hop / rate
    if transcript.words:
        start = max(start, min(float(transcript.words[0][1]), end - MIN_SPAN_SECONDS))
    start = float(np.clip(start, 0.0, max(0.0, seconds - MIN_SPAN_SECONDS)))
    return start, max(end - start, MIN_SPAN_SECONDS)


def speak(text: str, pseudo: PseudoVoice, wpm: float) -> tuple[np.ndarray, int]:
    """float32 speech of `text` at espeak-ng's rate, lead-in and tail silence trimmed."""
    from vpeval_espeak.driver import get_engine

    engine = get_engine()
    engine.set_voice(pseudo.voice_lines())
    samples = engine.synthesize(text, rate=int(round(wpm))).astype(np.float32) / 32768.0
    loud = np.flatnonzero(np.abs(samples) > SILENCE_RATIO * max(float(np.max(np.abs(samples), initial=0.0)), 1e-9))
    if len(loud) == 0:
        return np.zeros(0, np.float32), engine.sample_rate
    return samples[loud[0] : loud[-1] + 1], engine.sample_rate


def squeeze(speech: np.ndarray, length: int) -> np.ndarray:
    """Speech time-compressed (pitch kept, phase vocoder) to exactly `length` samples."""
    import librosa

    stretched = librosa.effects.time_stretch(speech, rate=len(speech) / length)
    out = np.zeros(length, np.float32)
    out[: min(length, len(stretched))] = stretched[:length]
    return out
