import itertools

import numpy as np
import pytest

from vpeval.api import Frontend, PluginContext
from vpeval.errors import DataError
from vpeval.stats import eer
from vpeval.testing.dummies import make_corpus
from vpeval.types import FrontendOutput, TrainingData, TrainingStage
from vpeval_token_probe.attacker import TokenProbe
from vpeval_token_probe.projection import fit_projection


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    corpus = make_corpus(tmp_path_factory.mktemp("c"), speakers=16, utterances=4, seconds=1.5, seed=3)
    speakers = corpus.speakers
    return corpus.with_speakers(speakers[:10]), corpus.with_speakers(speakers[10:])


class MomentsOnly(Frontend):
    """Features only (as Qwen3-Omni's encoder): the signal's frame energies in 16 bands."""

    name = "moments-only"
    frame_rate = 12.5

    def encode(self, audio):
        frames = audio[: len(audio) // 1280 * 1280].reshape(-1, 1280)
        spectrum = np.abs(np.fft.rfft(frames, axis=1))
        bands = np.stack([band.sum(axis=1) for band in np.array_split(spectrum, 16, axis=1)], axis=1)
        return FrontendOutput(12.5, features=np.log1p(bands).astype(np.float32))


def trained(train, frontend, tmp_path):
    attacker = TokenProbe(TokenProbe.Params(), PluginContext(seed=0, work_dir=tmp_path))
    attacker.frontend = frontend
    attacker.train(TrainingData([TrainingStage("original", train)]))
    return attacker


def held_out_eer(attacker, test):
    utts = test.utterances
    reps = attacker.represent_many([[u] for u in utts])
    pairs = list(itertools.combinations(range(len(utts)), 2))
    scores = attacker.score(reps[[i for i, _ in pairs]], reps[[j for _, j in pairs]])
    targets = np.array([utts[i].speaker == utts[j].speaker for i, j in pairs])
    return eer(scores, targets)


@pytest.fixture(scope="module")
def fbank_attacker(split, tmp_path_factory):
    cpu = pytest.importorskip("vpeval_cpu_frontends.fbank_rvq")
    train, _ = split
    frontend = cpu.FbankRvqFrontend(cpu.FbankRvqFrontend.Params(codebook_size=32), PluginContext(seed=0))
    frontend.fit(train)
    return trained(train, frontend, tmp_path_factory.mktemp("a"))


def test_beats_chance_on_held_out_speakers_with_fbank_rvq(split, fbank_attacker):
    assert held_out_eer(fbank_attacker, split[1]) < 0.35


def test_works_on_a_features_only_frontend(split, tmp_path):
    assert held_out_eer(trained(split[0], MomentsOnly(), tmp_path), split[1]) < 0.45


def test_save_load_round_trip_and_multi_utterance_side(split, fbank_attacker, tmp_path):
    fbank_attacker.save(tmp_path / "state")
    restored = TokenProbe(TokenProbe.Params(), PluginContext(seed=0))
    restored.frontend = fbank_attacker.frontend
    restored.load(tmp_path / "state")
    side = split[1].utterances[:3]
    assert np.allclose(restored.represent(side), fbank_attacker.represent(side))
    singles = np.stack([restored.represent([u]) for u in side])
    mean = singles.mean(0)
    assert np.allclose(restored.represent(side), mean / np.linalg.norm(mean))


def test_composed_projection_equals_the_scikit_learn_pipeline():
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    rng = np.random.default_rng(0)
    speakers = np.repeat(np.arange(6), 5)
    x = rng.normal(size=(30, 40)) + rng.normal(size=(6, 40))[speakers] * 2
    weight, bias = fit_projection(x, speakers, pca_dim=20, lda_dim=4, seed=0)
    mean, scale = x.mean(0), np.maximum(x.std(0), 1e-6 + 1e-3 * x.std(0).max())
    pca = PCA(n_components=20, whiten=True, random_state=0).fit((x - mean) / scale)
    reduced = pca.transform((x - mean) / scale)
    lda = LinearDiscriminantAnalysis(n_components=4, solver="eigen", shrinkage="auto").fit(reduced, speakers)
    assert np.allclose(x @ weight + bias, lda.transform(reduced), atol=1e-8)


def test_user_errors(split, tmp_path):
    attacker = TokenProbe(TokenProbe.Params(), PluginContext(seed=0, work_dir=tmp_path))
    with pytest.raises(DataError, match="frontend"):
        attacker.train(TrainingData([TrainingStage("original", split[0])]))
    attacker.frontend = MomentsOnly()
    one_speaker = split[0].with_speakers(split[0].speakers[:1])
    with pytest.raises(DataError, match="two speakers"):
        attacker.train(TrainingData([TrainingStage("original", one_speaker)]))


def test_batched_statistics_equal_one_utterance_at_a_time(tmp_path):
    """On a GPU token-probe encodes through the frontend's encode_batch in this process; the statistics are
    those of encode() per utterance (checked here on the CPU path's inputs)."""
    from vpeval_token_probe.statistics import layout

    fbank_rvq = pytest.importorskip("vpeval_cpu_frontends.fbank_rvq")
    corpus = make_corpus(tmp_path / "c", speakers=2, utterances=3, seconds=1.0, seed=1)
    frontend = fbank_rvq.FbankRvqFrontend(fbank_rvq.FbankRvqFrontend.Params(codebook_size=8), PluginContext(seed=0))
    frontend.fit(corpus)
    probe = TokenProbe(TokenProbe.Params(), PluginContext(seed=0, work_dir=tmp_path / "w"))
    probe.frontend = frontend
    probe.layout = layout(probe._encode(corpus.utterances[0]))
    batched = probe._compute_statistics_batch(corpus.utterances)
    for u, vector in zip(corpus.utterances, batched):
        np.testing.assert_array_equal(vector, probe._compute_statistics(u))


def test_on_a_gpu_statistics_are_computed_here_in_batches_not_in_forked_workers(tmp_path):
    """context.on_gpu: the frontend's encode_batch in this process (cached_batches), never context.map;
    the vectors equal the CPU path's. fbank-rvq stays on the CPU, so a 'cuda' context runs here."""
    fbank_rvq = pytest.importorskip("vpeval_cpu_frontends.fbank_rvq")
    corpus = make_corpus(tmp_path / "c", speakers=2, utterances=3, seconds=1.0, seed=2)
    frontend = fbank_rvq.FbankRvqFrontend(fbank_rvq.FbankRvqFrontend.Params(codebook_size=8), PluginContext(seed=0))
    frontend.fit(corpus)
    cpu = TokenProbe(TokenProbe.Params(), PluginContext(seed=0, work_dir=tmp_path / "cpu"))
    gpu = TokenProbe(TokenProbe.Params(), PluginContext(seed=0, work_dir=tmp_path / "gpu", device="cuda"))
    cpu.frontend = gpu.frontend = frontend
    calls = []
    gpu.context.map = lambda *a, **k: calls.append(a) or []
    expected, got = cpu._statistics_many(corpus.utterances), gpu._statistics_many(corpus.utterances)
    assert not calls and gpu.context.on_gpu
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)
