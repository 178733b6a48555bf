"""embedding-view is the viewed attacker, unchanged, plus that attacker's single-utterance embeddings."""

import types
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from vpeval import hookimpl
from vpeval.api import Attacker
from vpeval.errors import ConfigError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval.testing.contracts import AttackerContract
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage, Utterance


class Level(Attacker):
    """Mean absolute sample and zero-crossing rate, minus the training mean (trained, saved, loaded)."""

    name = "test-level"

    def train(self, data: TrainingData) -> None:
        self.mean = np.mean([self._features(u) for u in data.corpus], axis=0)

    def save(self, folder: Path) -> None:
        np.save(Path(folder) / "mean.npy", self.mean)

    def load(self, folder: Path) -> None:
        self.mean = np.load(Path(folder) / "mean.npy")

    def _features(self, u: Utterance) -> np.ndarray:
        audio = u.load(16000)
        return np.array([np.abs(audio).mean(), np.mean(np.diff(np.sign(audio)) != 0)])

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return np.mean([self._features(u) for u in utterances], axis=0) - self.mean


@pytest.fixture(scope="module", autouse=True)
def level_attacker():
    module = types.ModuleType("embedding_view_test_attackers")
    module.register_attackers = hookimpl(lambda register: register(Level))
    manager = get_plugin_manager()
    manager.register_module(module, "vpeval-embedding-view-tests", "1.0", name="vpeval-embedding-view-tests")
    yield
    manager.unregister_module(module)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("audio"), 6, 3, seconds=0.5, seed=1, name="v")


def _pair(tmp_path, corpus):
    data = TrainingData([TrainingStage("original", corpus)])
    plain = plugin_context(seed=0, work_dir=tmp_path / "a").get("attacker", "test-level")
    view = plugin_context(seed=0, work_dir=tmp_path / "b").get("attacker", "embedding-view", {"use": "test-level"})
    plain.train(data)
    view.train(data)
    return plain, view


def test_it_scores_as_the_viewed_attacker(tmp_path, corpus):
    plain, view = _pair(tmp_path, corpus)
    sides = [[u] for u in corpus][:4] + [list(corpus)[4:7]]
    a, b = plain.represent_many(sides), view.represent_many(sides)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(plain.score(a[:-1], a[1:]), view.score(b[:-1], b[1:]))
    assert view.recovers_embeddings()


def test_embeddings_are_the_viewed_attackers_single_utterance_representations(tmp_path, corpus):
    plain, view = _pair(tmp_path, corpus)
    louder = type(corpus)("louder", list(corpus), dict(corpus.speaker_gender))  # same ids: a stand-in version
    observed, original, speakers = view.inversion_embeddings(louder, corpus)
    for k, u in enumerate(corpus):
        np.testing.assert_array_equal(observed[k], plain.represent([u]))
        np.testing.assert_array_equal(original[k], plain.represent([corpus[u.id]]))
    assert speakers.tolist() == [u.speaker for u in corpus]


def test_each_utterance_is_represented_once_per_model(tmp_path, corpus):
    plain, view = _pair(tmp_path, corpus)
    asked = []
    represent_many = view.viewed.represent_many
    view.viewed.represent_many = lambda sides: (
        asked.extend(u.id for side in sides for u in side) or represent_many(sides)
    )
    copies = []
    for u in corpus:  # the same ids at other paths: a stand-in anonymized version
        copy = tmp_path / "copy" / Path(u.path).name
        copy.parent.mkdir(exist_ok=True)
        copy.write_bytes(Path(u.path).read_bytes())
        copies.append(u.replace(path=str(copy)))
    louder = type(corpus)("louder", copies, dict(corpus.speaker_gender))
    first = view.inversion_embeddings(corpus)
    again = view.inversion_embeddings(louder, corpus)  # the originals are the ones already represented
    np.testing.assert_array_equal(again[1], first[0])
    assert sorted(asked) == sorted([u.id for u in corpus] * 2)
    view.train(TrainingData([TrainingStage("original", corpus)]))  # a new model represents anew
    view.inversion_embeddings(corpus)
    assert len(asked) == 3 * len(corpus)


def test_save_and_load_keep_the_viewed_model(tmp_path, corpus):
    _, view = _pair(tmp_path, corpus)
    view.save(tmp_path)
    again = plugin_context(seed=0, work_dir=tmp_path / "c").get("attacker", "embedding-view", {"use": "test-level"})
    again.load(tmp_path)
    side = [[u] for u in corpus]
    np.testing.assert_array_equal(again.represent_many(side), view.represent_many(side))


def test_viewing_itself_is_refused(tmp_path, corpus):
    view = plugin_context(seed=0, work_dir=tmp_path).get("attacker", "embedding-view", {"use": "embedding-view"})
    with pytest.raises(ConfigError, match="views another attacker"):
        view.train(TrainingData([TrainingStage("original", corpus)]))


class TestEmbeddingViewContract(AttackerContract):
    plugin_name = "embedding-view"
    params = {"use": "test-level"}
