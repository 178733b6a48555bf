import pytest

from vpeval.testing.dummies import make_corpus
from vpeval.testing.realdata import real_data_root

REAL = real_data_root()


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """12 speakers (6 f, 6 m), 12 utterances each in two sessions: enough for N up to 5. Read only."""
    return make_corpus(tmp_path_factory.mktemp("corpus") / "wav", speakers=12, utterances=12, seconds=0.15)


@pytest.fixture
def small_corpus(tmp_path):
    """2 speakers x 3 utterances in this test's own folder, for tests that change files."""
    return make_corpus(tmp_path / "wav", speakers=2, utterances=3, seconds=0.15)


def needs_real(folder: str):
    return pytest.mark.skipif(not (REAL / folder / "metadata.csv").is_file(), reason=f"{REAL / folder} is not here")
