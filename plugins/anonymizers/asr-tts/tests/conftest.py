"""A tiny real-speech corpus spoken by espeak-ng (4 speakers x 3 sentences), written as 16 kHz wav files."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from vpeval.types import Utterance

SENTENCES = (
    "the river was green and cold in the morning",
    "please bring seven yellow papers to the table",
    "my brother opened the window after dinner",
)


@pytest.fixture(scope="session")
def espeak_corpus(tmp_path_factory):
    from vpeval.audio import resample
    from vpeval_asr_tts.anonymizer import speak
    from vpeval_asr_tts.voice import PseudoVoice

    folder = tmp_path_factory.mktemp("asrtts-corpus")
    utterances = []
    for s in range(4):
        speaker = PseudoVoice.draw(np.random.default_rng([99, s]), "f" if s % 2 == 0 else "m", (150.0, 160.0))
        for u, text in enumerate(SENTENCES):
            speech, rate = speak(text, speaker, speaker.rate_wpm)
            audio = np.concatenate(
                [np.zeros(4000, np.float32), resample(speech, rate, 16000), np.zeros(3200, np.float32)]
            )
            path = folder / f"s{s}-u{u}.wav"
            sf.write(path, 0.5 * audio / np.max(np.abs(audio)), 16000, subtype="PCM_16")
            utterances.append(
                Utterance(
                    id=f"s{s}-u{u}",
                    speaker=f"s{s}",
                    path=str(path),
                    transcript=text,
                    gender=speaker.gender,
                    sample_rate=16000,
                )
            )
    return utterances
