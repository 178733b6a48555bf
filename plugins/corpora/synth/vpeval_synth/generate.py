"""Generating one speaker's utterances: text from the idiolect, speech from espeak-ng, then the channel.

Every random choice comes from a stream of its own, numpy.default_rng([seed, purpose, speaker, ...]),
so adding speakers or utterances leaves the existing ones unchanged; every synthesis starts from the
same fresh espeak-ng state (espeak.py), so the same settings give the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from vpeval_synth.channel import Channel, record
from vpeval_synth.grammar import Idiolect, to_transcript
from vpeval_synth.styles import STYLES
from vpeval_synth.voice import ACCENTS, AGE_RANGES, VoiceProfile, add_breath

GENERATOR_VERSION = "7"
EMOTIONS = tuple(STYLES)
# Stream purposes: one stream per speaker voice, per session, per utterance and per speaker's age.
_VOICE, _SESSION, _UTTERANCE, _AGE = 1, 2, 3, 4


@dataclass(frozen=True)
class Settings:
    """Everything generation depends on (the cache key is built from these and the version)."""

    seed: int
    speakers: int
    utterances: int
    sample_rate: int = 16000
    min_seconds: float = 2.0
    max_seconds: float = 8.0
    sessions: int = 4
    voice_spread: float = 1.0
    idiolect_alpha: float = 0.3
    favourites: int = 2
    emotion_share: float = 0.4
    style_strength: float = 1.0
    session_variation: float = 1.0
    snr_db: tuple[float, float] = (25.0, 40.0)
    level_db: tuple[float, float] = (-32.0, -18.0)
    speaker_groups: bool = False  # an age and an accent group per speaker, shaping the voice


@dataclass
class Speaker:
    id: str
    gender: str
    voice: VoiceProfile
    idiolect: Idiolect
    channels: list[Channel]
    age: int | None = None  # years (speaker_groups)
    accent: str | None = None  # one of voice.ACCENTS (speaker_groups)


def speaker_id(index: int) -> str:
    return f"s{index:04d}"


def speaker_gender(index: int) -> str:
    return "f" if index % 2 == 0 else "m"  # balanced groups, fixed per index


def speaker_group(settings: Settings, index: int) -> tuple[int, str]:
    """The age and accent group of speaker `index`: band and accent from the index (balanced with gender),
    the age within its band from the speaker's own stream, so the voice's other draws are unchanged."""
    low, high = AGE_RANGES[(index // 2) % len(AGE_RANGES)]
    age = int(np.random.default_rng([settings.seed, _AGE, index]).integers(low, high + 1))
    return age, list(ACCENTS)[(index // (2 * len(AGE_RANGES))) % len(ACCENTS)]


def make_speaker(settings: Settings, index: int) -> Speaker:
    rng = np.random.default_rng([settings.seed, _VOICE, index])
    gender = speaker_gender(index)
    voice = VoiceProfile.draw(gender, rng, settings.voice_spread)
    idiolect = Idiolect.draw(rng, settings.idiolect_alpha, settings.favourites)
    channels = [
        Channel.draw(np.random.default_rng([settings.seed, _SESSION, index, s]), settings.session_variation)
        for s in range(settings.sessions)
    ]
    if not settings.speaker_groups:
        return Speaker(speaker_id(index), gender, voice, idiolect, channels)
    age, accent = speaker_group(settings, index)
    return Speaker(speaker_id(index), gender, voice.shaped(age, accent), idiolect, channels, age, accent)


def generate_speaker(settings: Settings, index: int, folder: Path) -> list[dict]:
    """Write one speaker's wav files under folder/audio/<speaker>/ and return their manifest rows."""
    from vpeval_espeak.driver import get_engine

    engine = get_engine()
    speaker = make_speaker(settings, index)
    engine.set_voice(speaker.voice.voice_lines())
    out = folder / "audio" / speaker.id
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for j in range(settings.utterances):
        rng = np.random.default_rng([settings.seed, _UTTERANCE, index, j])
        audio, transcript, emotion = _utterance(settings, speaker, engine, rng)
        session = j % settings.sessions
        sv = settings.session_variation
        audio = record(
            audio,
            settings.sample_rate,
            speaker.channels[session],
            tilt=STYLES[emotion].scaled(settings.style_strength).tilt + sv * rng.uniform(-0.25, 0.25),
            snr_db=rng.uniform(*settings.snr_db),
            level_db=rng.uniform(*settings.level_db),
            rng=rng,
        )
        uid = f"{speaker.id}-u{j:03d}"
        path = out / f"{uid}.wav"
        sf.write(path, audio, settings.sample_rate, subtype="PCM_16")
        rows.append(
            {
                "id": uid,
                "speaker": speaker.id,
                "path": str(path.relative_to(folder)),
                "gender": speaker.gender,
                "transcript": transcript,
                "emotion": emotion,
                "session": f"{speaker.id}-s{session}",
                "sample_rate": settings.sample_rate,
                "duration": round(len(audio) / settings.sample_rate, 4),
            }
            | ({"age": speaker.age, "accent": speaker.accent} if settings.speaker_groups else {})
        )
    return rows


RATE_FIT_ATTEMPTS = 8  # after the 16 sentence attempts, this many rate adjustments


def _utterance(settings: Settings, speaker: Speaker, engine, rng: np.random.Generator) -> tuple[np.ndarray, str, str]:
    """Clean speech at the corpus rate, its transcript and its emotion, within the length limits."""
    sv = settings.session_variation
    emotion = "neutral" if rng.random() >= settings.emotion_share else str(rng.choice(EMOTIONS[1:]))
    style = STYLES[emotion].scaled(settings.style_strength)
    rate = speaker.voice.rate_wpm * style.rate * float(np.exp(sv * 0.06 * rng.standard_normal()))
    pitch = int(np.clip(round(50 + style.pitch + sv * 4 * rng.standard_normal()), 0, 100))
    pitch_range = int(np.clip(round(style.pitch_range + sv * 8 * rng.standard_normal()), 0, 100))
    pads = rng.uniform(0.1, 0.35, size=2)
    target = rng.uniform(settings.min_seconds + 0.3, settings.max_seconds - 0.8) - pads.sum()
    words_per_second = rate / 60
    clauses = [speaker.idiolect.clause(rng)]
    while sum(len(c.split()) for c in clauses) < target * words_per_second * 0.85:
        clauses.append(speaker.idiolect.clause(rng))
    sentence = speaker.idiolect.sentence(clauses, rng)
    for attempt in range(16 + RATE_FIT_ATTEMPTS):
        speech = _speak(engine, sentence, rate, pitch, pitch_range, style.volume, settings.sample_rate)
        seconds = len(speech) / settings.sample_rate + pads.sum()
        if attempt >= 16 and not settings.min_seconds <= seconds <= settings.max_seconds:
            # Very slow or fast styles (large style_strength) with a narrow range: scale the rate so this
            # sentence lands mid-range. Only utterances that used to fail get here, so corpora that could
            # be made before keep their bytes.
            goal = (settings.min_seconds + settings.max_seconds) / 2 - pads.sum()
            rate *= (seconds - pads.sum()) / goal
        elif seconds > settings.max_seconds:
            if len(clauses) > 1:
                clauses.pop()
            elif attempt < 10:  # another, hopefully shorter, sentence
                clauses = [speaker.idiolect.clause(rng)]
            else:  # a slow speaker and a short limit: speed up as a last resort
                rate *= 1.1
            sentence = speaker.idiolect.sentence(clauses, rng)
        elif seconds < settings.min_seconds:
            clauses.append(speaker.idiolect.clause(rng))
            sentence = speaker.idiolect.sentence(clauses, rng)
        else:
            break
    else:
        raise RuntimeError(
            f"could not fit an utterance of {speaker.id} into {settings.min_seconds}-{settings.max_seconds} s"
        )
    speech = add_breath(speech, settings.sample_rate, speaker.voice.breath_db, rng)
    before, after = (np.round(pads * settings.sample_rate)).astype(int)
    audio = np.concatenate([np.zeros(before, np.float32), speech, np.zeros(after, np.float32)])
    return audio, to_transcript(sentence), emotion


def _speak(engine, text: str, rate: float, pitch: int, pitch_range: int, volume: int, sample_rate: int) -> np.ndarray:
    """espeak-ng output, resampled to the corpus rate, without leading and trailing silence."""
    raw = engine.synthesize(text, rate=int(round(rate)), pitch=pitch, pitch_range=pitch_range, volume=volume)
    audio = soxr.resample(raw.astype(np.float32) / 32768.0, engine.sample_rate, sample_rate, quality="HQ")
    loud = np.flatnonzero(np.abs(audio) > 0.01 * np.max(np.abs(audio)))
    return audio[loud[0] : loud[-1] + 1] if len(loud) else audio
