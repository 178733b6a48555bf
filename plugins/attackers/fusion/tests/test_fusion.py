"""The fusion attacker on a constructed corpus whose speakers differ in two independent cues, pitch and
loudness, each blurred per utterance: one test attacker hears only the pitch, the other only the level.
Fused, they must verify better than either; the fused score must be the logistic regression the held-out
pairs give (refitted here with scikit-learn); a saved fusion must score as before."""

import types
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pydantic import Field

from vpeval import hookimpl
from vpeval.api import Attacker, Params
from vpeval.errors import ConfigError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval.stats import eer
from vpeval.testing.contracts import AttackerContract
from vpeval.types import Corpus, TrainingData, TrainingStage, Utterance
from vpeval_fusion.attacker import Fusion, held_out_trials

RATE = 16000


class PitchCue(Attacker):
    """Hears only the pitch: the log frequency of the strongest spectral peak (pretrained)."""

    name = "test-pitch-cue"
    needs_training = False

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        def f0(u):
            audio = u.load(RATE)
            spectrum = np.abs(np.fft.rfft(audio * np.hanning(len(audio)), n=8 * len(audio)))
            return np.log(np.argmax(spectrum) * RATE / (8 * len(audio)))

        return np.array([np.mean([f0(u) for u in utterances])])

    def score(self, enroll, test):
        return -np.abs(enroll[:, 0] - test[:, 0])


class LevelCue(Attacker):
    """Hears only the loudness (dB RMS), relative to the training mean (trained, saved and loaded)."""

    name = "test-level-cue"

    class Params(Params):
        floor: float = Field(-80.0, description="dB floor")

    def train(self, data: TrainingData) -> None:
        self.mean = float(np.mean([self._level(u) for u in data.corpus]))

    def save(self, folder: Path) -> None:
        (Path(folder) / "mean.txt").write_text(repr(self.mean))

    def load(self, folder: Path) -> None:
        self.mean = float((Path(folder) / "mean.txt").read_text())

    def _level(self, u):
        return max(20 * np.log10(np.sqrt(np.mean(u.load(RATE) ** 2))), self.params.floor)

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return np.array([np.mean([self._level(u) for u in utterances]) - self.mean])

    def score(self, enroll, test):
        return -np.abs(enroll[:, 0] - test[:, 0])


@pytest.fixture(scope="module", autouse=True)
def cue_attackers():
    module = types.ModuleType("fusion_test_attackers")

    def register_attackers(register):
        register(PitchCue)
        register(LevelCue)

    module.register_attackers = hookimpl(register_attackers)
    manager = get_plugin_manager()
    manager.register_module(module, "vpeval-fusion-tests", "1.0", name="vpeval-fusion-tests")
    yield
    manager.unregister_module(module)


def _corpus(folder: Path, speakers: int, utterances: int, seed: int, name: str) -> Corpus:
    """Harmonic tones: a speaker's pitch and level, each blurred per utterance."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(0.4 * RATE)) / RATE
    utts = []
    for s in range(speakers):
        pitch, level = rng.uniform(100, 250), rng.uniform(-30, -6)
        for k in range(utterances):
            f0 = pitch * np.exp(rng.normal(0, 0.08))
            gain = 10 ** ((level + rng.normal(0, 2.5)) / 20)
            audio = sum(np.sin(2 * np.pi * h * f0 * t + rng.uniform(0, 6.28)) / h for h in range(1, 6))
            audio = gain * audio / np.sqrt(np.mean(audio**2))
            path = folder / f"{name}{s:02d}_{k}.wav"
            sf.write(path, audio.astype(np.float32), RATE)
            utts.append(Utterance(f"{name}{s:02d}_{k}", f"{name}{s:02d}", str(path)))
    return Corpus(name, utts)


def _all_pairs(corpus: Corpus):
    utts = corpus.utterances
    i, j = np.triu_indices(len(utts), k=1)
    targets = np.array([utts[a].speaker == utts[b].speaker for a, b in zip(i, j, strict=True)])
    return utts, i, j, targets


def _eer(attacker: Attacker, corpus: Corpus) -> float:
    utts, i, j, targets = _all_pairs(corpus)
    sides = attacker.represent_many([[u] for u in utts])
    return 100 * eer(attacker.score(sides[i], sides[j]), targets)


FUSION = {"attackers": [{"use": "test-pitch-cue"}, {"use": "test-level-cue"}], "held_out": 0.4}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cues")
    return _corpus(root / "train", 30, 6, seed=1, name="t"), _corpus(root / "eval", 20, 6, seed=2, name="e")


def test_fusion_beats_each_attacker_on_the_two_cue_corpus(tmp_path, data):
    train, evaluation = data
    training = TrainingData([TrainingStage("original", train)])
    pitch = plugin_context(seed=0, work_dir=tmp_path / "p").get("attacker", "test-pitch-cue")
    level = plugin_context(seed=0, work_dir=tmp_path / "l").get("attacker", "test-level-cue")
    level.train(training)  # each part on all training speakers: the fusion's parts see fewer
    fusion = Fusion(Fusion.Params(**FUSION), plugin_context(seed=0, work_dir=tmp_path / "f"))
    fusion.train(training)
    eers = {"pitch": _eer(pitch, evaluation), "level": _eer(level, evaluation), "fusion": _eer(fusion, evaluation)}
    assert eers["fusion"] < min(eers["pitch"], eers["level"]) - 3.0, eers
    assert all(w > 0 for w in fusion.fit_summary["weights"].values())  # both cues used
    assert fusion.fit_summary["held_out_speakers"] == 12


def test_fused_score_is_the_logistic_regression_of_the_held_out_pairs(tmp_path, data):
    from sklearn.linear_model import LogisticRegression

    train, _ = data
    fusion = Fusion(Fusion.Params(**FUSION), plugin_context(seed=3, work_dir=tmp_path))
    fusion.train(TrainingData([TrainingStage("original", train)]))
    # the same held-out draw and pairs, refitted without standardising the scores
    rng = plugin_context(seed=3, work_dir=tmp_path / "r").rng("fusion", "held-out")
    speakers = np.array(sorted({u.speaker for u in train}))
    held = set(rng.choice(speakers, size=round(0.4 * len(speakers)), replace=False))
    utts = [u for u in train if u.speaker in held]
    e, t, y = held_out_trials(np.array([u.speaker for u in utts]), 20, rng)
    sides = fusion.represent_many([[u] for u in utts])
    scores = fusion.part_scores(sides[e], sides[t])
    reference = LogisticRegression(C=1e6, class_weight="balanced", max_iter=10_000).fit(scores, y)
    ours = fusion.score(sides[e], sides[t])
    theirs = reference.decision_function(scores)
    assert np.corrcoef(ours, theirs)[0, 1] > 0.999  # same direction; C=1 shrinks the weights a little
    assert abs(np.mean(ours[y]) - np.mean(theirs[y])) < 0.5 * np.std(theirs)
    assert fusion.fit_summary["pairs"] == len(y)


def test_a_saved_fusion_scores_as_before(tmp_path, data):
    train, evaluation = data
    fusion = Fusion(Fusion.Params(**FUSION), plugin_context(seed=0, work_dir=tmp_path / "a"))
    fusion.train(TrainingData([TrainingStage("original", train)]))
    fusion.save(tmp_path / "saved")
    loaded = Fusion(Fusion.Params(**FUSION), plugin_context(seed=0, work_dir=tmp_path / "b"))
    loaded.load(tmp_path / "saved")
    utts, i, j, _ = _all_pairs(evaluation)
    a = fusion.represent_many([[u] for u in utts])
    b = loaded.represent_many([[u] for u in utts])
    np.testing.assert_array_equal(fusion.score(a[i], a[j]), loaded.score(b[i], b[j]))
    assert loaded.fit_summary == fusion.fit_summary


def test_fusing_a_fusion_is_refused(tmp_path, data):
    params = Fusion.Params(attackers=[{"use": "fusion", "params": FUSION}, {"use": "test-pitch-cue"}])
    with pytest.raises(ConfigError, match="cannot fuse another fusion"):
        Fusion(params, plugin_context(seed=0, work_dir=tmp_path)).train(TrainingData([TrainingStage("o", data[0])]))


def test_held_out_pairs_are_what_they_claim():
    speakers = np.repeat(["a", "b", "c"], [3, 1, 2])
    e, t, y = held_out_trials(speakers, 5, np.random.default_rng(0))
    assert (speakers[e][y] == speakers[t][y]).all() and (e[y] != t[y]).all()
    assert (speakers[e][~y] != speakers[t][~y]).all()
    assert y.sum() == 10 and (~y).sum() == 15  # b has one utterance: no same-speaker pair


class TestFusionContract(AttackerContract):
    plugin_name = "fusion"
    params = FUSION
