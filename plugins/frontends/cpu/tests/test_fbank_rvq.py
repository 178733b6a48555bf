import numpy as np
import pytest
from pydantic import ValidationError

from vpeval.api import PluginContext
from vpeval.errors import DataError
from vpeval.plugins import plugin_context
from vpeval_cpu_frontends.fbank_rvq import FbankRvqFrontend
from vpeval_cpu_frontends.quantizers import decode_residual


def make(tmp_path, seed=0, **params):
    params.setdefault("codebook_size", 16)
    return FbankRvqFrontend(FbankRvqFrontend.Params(**params), PluginContext(seed=seed, work_dir=tmp_path))


@pytest.fixture(scope="module")
def fitted(corpus, tmp_path_factory):
    frontend = make(tmp_path_factory.mktemp("w"))
    frontend.fit(corpus)
    return frontend


@pytest.mark.parametrize("rate", [25.0, 12.5])
def test_shapes_rates_and_token_ranges(corpus, tmp_path, rate):
    frontend = make(tmp_path, frame_rate=rate, expose="tokens+features")
    frontend.fit(corpus)
    audio = corpus.utterances[0].load(16000)
    out = frontend.encode(audio)
    assert out.frame_rate == rate
    assert out.tokens.shape == (int(np.ceil(len(audio) / 16000 * rate)), 8)
    assert out.tokens.dtype == np.int64
    assert out.codebook_sizes == (16,) * 8
    assert out.tokens.min() >= 0 and out.tokens.max() < 16
    assert out.features.shape == (len(out.tokens), 80 * int(100 / rate))
    assert out.features.dtype == np.float32


def test_fit_is_deterministic_under_the_seed(corpus, fitted, tmp_path):
    again = make(tmp_path / "a", seed=0)
    again.fit(corpus)
    other = make(tmp_path / "b", seed=1)
    other.fit(corpus)
    audio = corpus.utterances[4].load(16000)
    assert np.array_equal(fitted.books, again.books)
    assert np.array_equal(fitted.encode(audio).tokens, again.encode(audio).tokens)
    assert not np.array_equal(fitted.books, other.books)


def test_workers_give_the_same_codebooks(corpus, fitted, tmp_path):
    # Two workers compute the features in forked processes and k-means with two BLAS threads.
    parallel = FbankRvqFrontend(
        FbankRvqFrontend.Params(codebook_size=16), plugin_context(seed=0, work_dir=tmp_path, workers=2)
    )
    parallel.fit(corpus)
    assert np.array_equal(parallel.books, fitted.books)
    assert np.array_equal(parallel.mean, fitted.mean) and np.array_equal(parallel.std, fitted.std)


def test_save_and_load_restore_the_codebooks(corpus, fitted, tmp_path):
    fitted.save(tmp_path / "state")
    restored = make(tmp_path)
    restored.load(tmp_path / "state")
    audio = corpus.utterances[2].load(16000)
    assert np.array_equal(restored.encode(audio).tokens, fitted.encode(audio).tokens)


def test_each_residual_stage_lowers_the_reconstruction_error(corpus, fitted):
    audio = corpus.utterances[7].load(16000)
    out = fitted.encode(audio)
    target = (fitted._features(audio) - fitted.mean) / fitted.std
    errors = [np.mean((target - decode_residual(out.tokens[:, :q], fitted.books[:q])) ** 2) for q in range(1, 9)]
    assert all(b < a for a, b in zip(errors, errors[1:]))
    assert errors[-1] < 0.6 * np.mean(target**2)


def test_bad_frame_rate_and_too_little_speech_are_user_errors(corpus, tmp_path):
    with pytest.raises(ValidationError, match="frame_rate"):  # at validate time; the config layer adds the line
        make(tmp_path, frame_rate=30.0)
    with pytest.raises(DataError, match="codebook_size"):
        make(tmp_path, codebook_size=4096).fit(corpus)


def test_tokens_only_by_default_as_mimi_and_higgs_expose(corpus, fitted, tmp_path):
    audio = corpus.utterances[3].load(16000)
    out = fitted.encode(audio)
    assert fitted.params.expose == "tokens" and out.features is None and out.tokens.shape[1] == 8
    both = make(tmp_path, expose="tokens+features")
    fitted.save(tmp_path / "state")
    both.load(tmp_path / "state")
    with_features = both.encode(audio)
    # The same tokens either way; the features are the raw stacked log-mel frames the tokens quantize.
    assert np.array_equal(with_features.tokens, out.tokens)
    assert np.array_equal(with_features.features, fitted._features(audio))


def test_encode_batch_equals_encode(corpus, fitted):
    audios = [u.load(16000) for u in corpus.utterances[:4]]
    for audio, out in zip(audios, fitted.encode_batch(audios)):
        assert np.array_equal(out.tokens, fitted.encode(audio).tokens) and out.features is None
