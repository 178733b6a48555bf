"""Training data streamed from disk: planning an epoch reads no samples, each crop reads only its own
frames, and the data path's memory does not grow with the corpus."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
import soundfile

from vpeval.plugins import plugin_context
from vpeval.testing.dummies import make_corpus
from vpeval_dast.attacker import DastAttacker
from vpeval_dast.training_data import StageCrops


@pytest.fixture(scope="module")
def sizes(tmp_path_factory):
    """Corpora of N and 4N utterances of about 4 s."""
    folder = tmp_path_factory.mktemp("streaming")
    small = make_corpus(folder / "n", speakers=4, utterances=3, seconds=4.0, seed=1)
    large = make_corpus(folder / "4n", speakers=8, utterances=6, seconds=4.0, seed=2)
    return small, large


def _crops(corpus, tmp_path, tiny, **extra):
    params = DastAttacker.Params(**{**tiny, "crop_seconds": 0.5, "loader_workers": 0, **extra}, fusion="fbank")
    attacker = DastAttacker(params, plugin_context(seed=0, work_dir=tmp_path))
    attacker._embedder = attacker._new_embedder()
    return StageCrops(corpus.utterances, attacker.embedder, params, attacker.context, "test"), params


def test_planning_reads_no_samples(sizes, tmp_path, tiny, monkeypatch):
    reads = []
    monkeypatch.setattr(soundfile, "read", lambda *a, **k: reads.append(a) or (_ for _ in ()).throw(AssertionError))
    data, _ = _crops(sizes[1], tmp_path, tiny)
    assert not reads
    # one 0.5 s crop per 0.5 s of each utterance, from the declared durations
    assert len(data.items) == sum(int(round(u.duration * 16000)) // 8000 for u in sizes[1].utterances)


def test_each_crop_reads_only_its_frames(sizes, tmp_path, tiny, monkeypatch):
    calls = []
    real = soundfile.read
    monkeypatch.setattr(soundfile, "read", lambda *a, **k: calls.append(k.get("frames")) or real(*a, **k))
    data, params = _crops(sizes[0], tmp_path, tiny)
    waves, hidden, labels = next(data.batches(1, 4, shuffle_seed=0))
    assert waves.shape == (4, 8000) and hidden is None and labels.shape == (4,)
    assert calls == [8000] * 4


def test_same_epoch_same_crops_other_epoch_other_crops(sizes, tmp_path, tiny):
    data, _ = _crops(sizes[0], tmp_path, tiny)
    first = next(data.batches(1, 4, shuffle_seed=3))[0]
    again = next(data.batches(1, 4, shuffle_seed=3))[0]
    other = next(data.batches(2, 4, shuffle_seed=3))[0]
    assert np.array_equal(first.numpy(), again.numpy()) and not np.array_equal(first.numpy(), other.numpy())


def _peak_bytes(corpus, tmp_path, tiny) -> int:
    gc.collect()
    tracemalloc.start()
    data, _ = _crops(corpus, tmp_path, tiny)
    for _ in data.batches(1, 8, shuffle_seed=0):
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_data_path_memory_is_flat_in_corpus_size(sizes, tmp_path, tiny):
    """Four times the utterances: the peak of planning plus one epoch of crops stays within the batch in flight
    and the per-crop bookkeeping (a few hundred bytes a crop), far from the corpus's audio."""
    small, large = sizes
    _peak_bytes(small, tmp_path / "warm", tiny)  # first-use allocations (imports, lazy tables) out of the way
    small_peak = _peak_bytes(small, tmp_path / "a", tiny)
    large_peak = _peak_bytes(large, tmp_path / "b", tiny)
    audio_growth = (len(large.utterances) - len(small.utterances)) * 4.0 * 16000 * 4  # float32 samples
    assert large_peak - small_peak < 0.1 * audio_growth
    assert large_peak < 1.5 * small_peak


def test_worker_processes_give_the_same_batches(sizes, tmp_path, tiny):
    in_process, _ = _crops(sizes[0], tmp_path / "a", tiny)
    workers, _ = _crops(sizes[0], tmp_path / "b", tiny, loader_workers=2)
    assert workers.workers == 2
    assert _crops(sizes[0], tmp_path / "c", tiny, loader_workers=None)[0].workers == 0  # the CPU's default
    for (a, _, la), (b, _, lb) in zip(in_process.batches(1, 4, 7), workers.batches(1, 4, 7), strict=True):
        assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(la.numpy(), lb.numpy())


def test_a_crop_with_ssl_states_is_a_writable_copy_of_its_memory_mapped_frames(tmp_path, sizes):
    """The SSL frames come from a read-only memory map: the item must copy them (torch warns on, and a
    collated batch would alias, a non-writable array), with the file's values."""
    import warnings

    from vpeval_dast.training_data import CropsWithStates
    from vpeval_torch.crops import crop_items

    utterance = sizes[0].utterances[0]
    (item,) = crop_items([utterance], [0])
    hop = 320
    states = np.random.default_rng(0).standard_normal((3, item.frames // hop + 1, 4)).astype(np.float16)
    np.save(tmp_path / "states.npy", states)
    dataset = CropsWithStates([item], [str(tmp_path / "states.npy")], 0.5, hop, seed=0, epoch=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wave, frames, label = dataset[0]
    first = int(np.random.default_rng([0, 0, 0]).integers(0, item.frames - 8000 + 1)) // hop
    assert frames.numpy().flags.writeable and wave.numpy().flags.writeable and label == 0
    assert np.array_equal(frames.numpy(), states[:, first : first + 8000 // hop])
