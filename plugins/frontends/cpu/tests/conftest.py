import pytest

from vpeval.testing.dummies import make_corpus


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"), speakers=4, utterances=3, seconds=1.5, seed=5)
