"""A VoicePrivacy-layout recipe folder with anonymized copies written the way another toolkit would.

The originals are vpeval's dummy speakers; the anonymized copies are made here with numpy, scipy and
soundfile only (a resampling pitch-and-formant shift per utterance, written at another sample rate),
never through a vpeval anonymizer, and listed in hand-written wav.scp / utt2spk files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from vpeval.data.kaldi import write_data_dir
from vpeval.testing.dummies import make_corpus
from vpeval.types import Corpus

EXTERNAL_RATE = 22050  # the other toolkit writes 22.05 kHz; the originals are 16 kHz
SUFFIX = "_anon"


def external_shift(audio: np.ndarray, key: str) -> np.ndarray:
    """Pitch and formants moved by a factor fixed by the utterance id (1.3-1.6 up), as resampling does."""
    factor = 1.3 + 0.3 * int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little") / 2**32
    positions = np.arange(0, len(audio) - 1, factor)
    return np.interp(positions, np.arange(len(audio)), audio).astype(np.float32)


def write_external_copy(corpus: Corpus, folder: Path, audio_folder: Path) -> Path:
    """An anonymized copy of `corpus` as a Kaldi folder: same ids and speakers, files at EXTERNAL_RATE."""
    folder.mkdir(parents=True, exist_ok=True)
    audio_folder.mkdir(parents=True, exist_ok=True)
    scp, utt2spk = [], []
    for u in sorted(corpus.utterances, key=lambda u: u.id):
        audio, rate = sf.read(u.path, dtype="float32")
        shifted = resample_poly(external_shift(audio, u.id), EXTERNAL_RATE // 50, rate // 50)
        path = audio_folder / f"{u.id}.wav"
        sf.write(path, np.clip(shifted, -1, 1), EXTERNAL_RATE, subtype="PCM_16")
        scp.append(f"{u.id} {path}\n")
        utt2spk.append(f"{u.id} {u.speaker}\n")
    (folder / "wav.scp").write_text("".join(scp))
    (folder / "utt2spk").write_text("".join(utt2spk))
    return folder


@dataclass
class Recipe:
    data: Path  # the recipe's data/ folder
    corpus: Corpus  # every original utterance
    sets: dict[str, Corpus]  # original set name -> its utterances

    def anonymized(self, name: str) -> Path:
        return self.data / f"{name}{SUFFIX}"

    @property
    def anonymized_folders(self) -> list[str]:
        return [str(self.anonymized(name)) for name in self.sets]


def build_recipe(root: Path, speakers: int = 12, utterances: int = 6) -> Recipe:
    """data/{train, dev_enrolls, dev_trials_f, dev_trials_m} and their `_anon` copies.

    Half the speakers train attackers; each evaluation speaker enrolls with its first half of
    utterances and is tested on the rest against every same-gender evaluation speaker.
    """
    corpus = make_corpus(root / "wav", speakers, utterances, seconds=0.8, seed=5, name="dummy")
    by_speaker = corpus.by_speaker()
    names = sorted(by_speaker)
    train_speakers, eval_speakers = names[: speakers // 2], names[speakers // 2 :]
    half = utterances // 2
    ids = {
        "train": [u.id for s in train_speakers for u in by_speaker[s]],
        "dev_enrolls": [u.id for s in eval_speakers for u in by_speaker[s][:half]],
    }
    for g in ("f", "m"):
        ids[f"dev_trials_{g}"] = [u.id for s in eval_speakers if corpus.gender_of(s) == g for u in by_speaker[s][half:]]
    data = root / "data"
    sets = {name: corpus.subset(chosen, name=name) for name, chosen in ids.items()}
    for name, subset in sets.items():
        write_data_dir(subset, data / name)
        write_external_copy(subset, data / f"{name}{SUFFIX}", root / "anon-wav" / name)
    for g in ("f", "m"):
        lines = []
        for spk in eval_speakers:
            if corpus.gender_of(spk) != g:
                continue
            for u in sets[f"dev_trials_{g}"].utterances:
                lines.append(f"{spk} {u.id} {'target' if u.speaker == spk else 'nontarget'}\n")
        for folder in (data / f"dev_trials_{g}", data / f"dev_trials_{g}{SUFFIX}"):
            (folder / "trials").write_text("".join(lines))
    return Recipe(data, corpus, sets)


@pytest.fixture(scope="session")
def recipe(tmp_path_factory) -> Recipe:
    return build_recipe(tmp_path_factory.mktemp("recipe"))


@pytest.fixture
def make_recipe():
    """A recipe of one's own, for tests that rewrite its files."""
    return build_recipe
