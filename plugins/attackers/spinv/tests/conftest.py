import numpy as np
import pytest

from vpeval.api import SpeakerEncoder
from vpeval.testing.dummies import make_corpus


class BandEncoder(SpeakerEncoder):
    """A tiny speaker encoder for tests: mean log energies of 16 spectral bands, standardized on a corpus."""

    name = "bands"
    dim = 16

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self.mean, self.std = 0.0, 1.0

    def raw(self, audio):
        frames = audio[: len(audio) // 400 * 400].reshape(-1, 400)
        spectrum = np.abs(np.fft.rfft(frames, axis=1))
        return np.log1p(np.stack([b.sum(axis=1) for b in np.array_split(spectrum, 16, axis=1)], axis=1)).mean(axis=0)

    def fit(self, corpus):
        raw = np.stack([self.raw(u.load(16000)) for u in corpus.utterances])
        self.mean, self.std = raw.mean(axis=0), raw.std(axis=0) + 1e-6
        return self

    def embed(self, audio):
        return ((self.raw(audio) - self.mean) / self.std).astype(np.float32)


@pytest.fixture(scope="session")
def band_encoder_class():
    return BandEncoder


@pytest.fixture(scope="session")
def split(tmp_path_factory):
    corpus = make_corpus(tmp_path_factory.mktemp("c"), speakers=16, utterances=4, seconds=1.5, seed=3)
    return corpus.with_speakers(corpus.speakers[:10]), corpus.with_speakers(corpus.speakers[10:])
