"""Fixtures: a synthetic pool file, a synthetic evaluation set, a context and a voice maker."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from vpeval.api import PluginContext, Voice
from vpeval_embedding_anonymizers.synthetic import synthetic_embeddings


def _make_voices(context: PluginContext, keys, level="utterance", emotions=None, genders=None):
    voices = []
    for i, key in enumerate(keys):
        utt = SimpleNamespace(
            emotion=emotions[i] if emotions is not None else None, gender=genders[i] if genders is not None else None
        )
        voices.append(Voice(key=key, level=level, rng=context.rng("voice", key), utterance=utt))
    return voices


@pytest.fixture
def make_voices():
    return _make_voices


@pytest.fixture(scope="session")
def pool_file(tmp_path_factory):
    x, speakers, emotions = synthetic_embeddings(40, 20, seed=1)
    path = tmp_path_factory.mktemp("pool") / "pool.npz"
    genders = np.array(["f" if int(s[-3:]) % 2 == 0 else "m" for s in speakers])
    np.savez(path, embeddings=x, speakers=speakers, emotions=emotions, genders=genders)
    return str(path)


@pytest.fixture(scope="session")
def evaluation_set():
    return synthetic_embeddings(40, 10, seed=2)


@pytest.fixture(scope="session")
def work_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("work")


@pytest.fixture
def context(work_dir):
    return PluginContext(seed=7, work_dir=work_dir)
