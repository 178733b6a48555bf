"""GE2E: resemblyzer's preprocessing kept (with guards), low EER on real speakers, contracts, caching."""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval.stats import equal_error_rate
from vpeval.testing import AttackerContract, EncoderContract
from vpeval.testing.dummies import make_corpus, speaker_voice, synthesize
from vpeval.testing.realdata import real_data_root
from vpeval.types import Utterance
from vpeval_ge2e.attacker import Ge2eAttacker
from vpeval_ge2e.preprocess import normalize_volume, preprocess

REAL = Path(__file__).resolve().parents[4] / "shared" / "data" / "real"
if not REAL.is_dir():
    REAL = real_data_root()


class TestGe2eAttacker(AttackerContract):
    plugin_name = "ge2e"


class TestGe2eEncoder(EncoderContract):
    plugin_name = "ge2e"


def _resemblyzer_audio():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from resemblyzer import audio
    return audio


def test_preprocess_equals_resemblyzer_on_ordinary_speech():
    rng = np.random.default_rng(0)
    speech = synthesize(speaker_voice(1), 1.5, 16000, rng) * 0.05
    wav = np.concatenate([np.zeros(16000, np.float32), speech, np.zeros(8000, np.float32)])
    wav += rng.normal(0, 1e-4, wav.size).astype(np.float32)
    expected = _resemblyzer_audio().preprocess_wav(wav)
    ours = preprocess(wav)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-7)
    assert ours.size < wav.size  # the long leading silence was trimmed


def test_preprocess_guards_silence_loud_input_and_no_voice():
    silence = np.zeros(16000, np.float32)
    out = preprocess(silence)
    assert out.size == silence.size and np.isfinite(out).all()  # resemblyzer: NaN, then empty
    loud = synthesize(speaker_voice(0), 1.0, 16000, np.random.default_rng(1)) * 2.0  # beyond int16 range
    assert preprocess(loud).size > 0
    noise = np.random.default_rng(2).normal(0, 0.3, 16000).astype(np.float32)
    assert preprocess(noise, vad=True).size > 0
    quiet = loud * 1e-3
    rms = np.sqrt(np.mean(np.square(normalize_volume(quiet), dtype=np.float64)))
    assert 20 * np.log10(rms) == pytest.approx(-30.0, abs=1e-3)
    assert normalize_volume(loud) is loud  # never turned down


def test_each_utterance_is_embedded_once(tmp_path):
    corpus = make_corpus(tmp_path, speakers=2, utterances=3, seconds=1.0)
    attacker = Ge2eAttacker(Ge2eAttacker.Params(vad=False), PluginContext())
    calls = []
    embed = attacker.encoder.embed
    attacker.encoder.embed = lambda audio: calls.append(1) or embed(audio)
    u = corpus.utterances
    first = attacker.represent_many([u[:3], u[1:4], [u[0]]])
    again = attacker.represent_many([u[:3]])
    assert len(calls) == 4
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_allclose(first[2], attacker.encoder.embed(u[0].load(16000)), rtol=1e-6)


def _real(name: str, keep=lambda row: True) -> list[Utterance]:
    rows = list(csv.DictReader(open(REAL / name / "metadata.csv")))
    return [Utterance(r["path"], r["speaker"], str(REAL / name / r["path"])) for r in rows if keep(r)]


def _all_pairs_eer(attacker, sides, speakers) -> float:
    reps = attacker.represent_many(sides)
    speakers = np.array(speakers)
    i, j = np.triu_indices(len(sides), 1)
    scores = attacker.score(reps[i], reps[j])
    same = speakers[i] == speakers[j]
    return equal_error_rate(scores[same], scores[~same])


def _take(row) -> int:
    return int(Path(row["path"]).stem.split("_")[2])


def _digit(u: Utterance) -> int:
    return int(Path(u.path).stem.split("_")[0])


pytestmark_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared real speech not present")


@pytestmark_real
def test_pretrained_model_separates_real_vctk_speakers():
    """O-O EER over all same/different pairs of 40 VCTK sentences (4 speakers)."""
    utts = _real("vctk_autovc")
    eer = _all_pairs_eer(
        Ge2eAttacker(Ge2eAttacker.Params(), PluginContext()), [[u] for u in utts], [u.speaker for u in utts]
    )
    assert eer < 0.05, f"GE2E EER on VCTK is {eer:.2%}"


@pytestmark_real
def test_real_fsdd_digits_single_and_five_utterance_sides():
    """FSDD (8 kHz, read through Utterance.load(16000)): takes 0-1 of every digit of 6 speakers.

    Single sub-second digits, text-independent pairs: hard for GE2E (measured 18.8 %). Sides of five
    different digits (the mean d-vector) make it easy (measured 0.2 %).
    """
    utts = _real("fsdd", lambda r: _take(r) in (0, 1))
    attacker = Ge2eAttacker(Ge2eAttacker.Params(), PluginContext())
    single = _all_pairs_eer(attacker, [[u] for u in utts], [u.speaker for u in utts])
    groups: dict[tuple, list[Utterance]] = {}
    for u in utts:
        groups.setdefault((u.speaker, Path(u.path).stem.split("_")[2], _digit(u) < 5), []).append(u)
    five = _all_pairs_eer(attacker, list(groups.values()), [key[0] for key in groups])
    assert all(len(g) == 5 for g in groups.values())
    assert single < 0.25, f"GE2E single-digit EER on FSDD is {single:.2%}"
    assert five < 0.05 and five < single / 3, f"five-digit sides: {five:.2%} vs single {single:.2%}"


def test_embed_batch_equals_embed_of_each(tmp_path):
    """Partial windows of several utterances in one LSTM forward (chunks of batch_partials) give each
    utterance's own d-vector: max abs difference below 1e-5 (float rounding of another batch size)."""
    from vpeval_ge2e.encoder import Ge2eEncoder

    rng = np.random.default_rng(3)
    lengths = (0.7, 2.4, 1.6, 4.1)
    audios = [synthesize(speaker_voice(k % 3), seconds, 16000, rng) * 0.1 for k, seconds in enumerate(lengths)]
    encoder = Ge2eEncoder(Ge2eEncoder.Params(vad=False, batch_partials=3), PluginContext())
    batched = encoder.embed_batch(audios)
    single = np.stack([encoder.embed(a) for a in audios])
    assert batched.shape == (4, 256)
    assert np.abs(batched - single).max() < 1e-5
    assert encoder.embed_batch([]).shape == (0, 256)


def test_gpu_path_embeds_in_batches_in_this_process_and_uses_the_content_cache(tmp_path, monkeypatch):
    """On a GPU (faked here: context.on_gpu) represent_many runs embed_batch in this process, never the
    forked workers' map, and stores every d-vector in the content cache under the CPU's extractor key plus
    the device's numerics."""
    corpus = make_corpus(tmp_path / "c", speakers=2, utterances=2, seconds=1.0)
    context = PluginContext(options={"cache_root": str(tmp_path / "cache")})
    attacker = Ge2eAttacker(Ge2eAttacker.Params(vad=False), context)
    cpu_identity = attacker.extractor_identity()
    monkeypatch.setattr(type(context), "on_gpu", property(lambda self: True))
    monkeypatch.setattr(context, "map", lambda *a, **k: pytest.fail("forked map on a GPU"))
    calls = []
    batch = attacker.encoder.embed_batch
    attacker.encoder.embed_batch = lambda audios: calls.append(len(audios)) or batch(audios)
    u = corpus.utterances
    reps = attacker.represent_many([[x] for x in u])
    assert calls == [4]
    expected = np.stack([attacker.encoder.embed(x.load(16000)) for x in u])
    np.testing.assert_allclose(reps, expected, atol=1e-5)
    again = Ge2eAttacker(Ge2eAttacker.Params(vad=False), context)
    again.encoder.embed_batch = lambda audios: pytest.fail("cached d-vectors were computed again")
    np.testing.assert_array_equal(again.represent_many([[x] for x in u]), reps)
    assert cpu_identity == again.extractor_identity()  # the CPU's fp32 key: numerics add nothing there
