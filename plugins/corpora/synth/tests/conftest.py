from pathlib import Path

import pytest

from vpeval.api import PluginContext


def _make_source(work_dir: Path, **params):
    from vpeval_synth.source import SynthCorpus

    return SynthCorpus(SynthCorpus.Params(**params), PluginContext(seed=0, work_dir=work_dir))


@pytest.fixture(scope="session")
def make_source():
    """Build a synth source: make_source(work_dir, **params), with experiment seed 0."""
    return _make_source


@pytest.fixture(scope="session")
def tiny_source(tmp_path_factory):
    return _make_source(tmp_path_factory.mktemp("synth-tiny"), preset="tiny")


@pytest.fixture(scope="session")
def tiny_corpus(tiny_source):
    return tiny_source.load()
