"""The released-size ECAPA's embeddings are the same bits with one worker and with two (issue 39, item 3):
the run's cores embed whole packed buckets side by side at one torch thread each, instead of splitting each
forward pass into torch threads (whose sums change with the thread count)."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from vpeval.plugins import plugin_context
from vpeval.types import Utterance
from vpeval_speechbrain.params import SpeechBrainParams
from vpeval_speechbrain.service import FolderEmbeddings
from vpeval_speechbrain.tiny import write_ecapa_folder


def test_embeddings_are_the_same_bits_with_one_and_two_workers(tmp_path, audio):
    folder = write_ecapa_folder(tmp_path / "asv_orig", seed=2, channels=(512, 512, 512, 512, 1536))
    utterances = []
    for i in range(40):  # 40 utterances of 2-7 s: several packed buckets of at most 80 s
        path = tmp_path / f"u{i}.wav"
        sf.write(path, audio(2.0 + (i % 6), seed=i), 16000)
        utterances.append(Utterance(f"u{i}", f"s{i % 4}", str(path), duration=2.0 + (i % 6)))
    vectors = {}
    for workers in (1, 2):
        context = plugin_context(seed=0, work_dir=tmp_path / f"w{workers}", workers=workers)
        embeddings = FolderEmbeddings(SpeechBrainParams(source=str(folder)), context, "asv")
        assert embeddings.prepare().packs
        buckets = embeddings.prepare().buckets([int(u.duration * 16000) for u in utterances])
        assert len(buckets) > 2  # the two workers had buckets to share
        vectors[workers] = np.stack(embeddings.embed_utterances(utterances, "embed"))
    assert vectors[1].shape == (40, 16) and np.isfinite(vectors[1]).all()
    assert np.array_equal(vectors[1], vectors[2])


def test_each_utterance_is_prepared_once_and_the_resampler_is_built_once_per_rate(tmp_path, audio, monkeypatch):
    import torch
    from torchaudio.transforms import Resample

    from vpeval_speechbrain import embedding, service

    folder = write_ecapa_folder(tmp_path / "asv_orig", seed=2)
    utterances = []
    for i, rate in enumerate((8000, 16000, 8000, 24000)):
        path = tmp_path / f"u{i}.wav"
        sf.write(path, audio(1.5, seed=i)[: int(1.5 * rate)], rate)
        utterances.append(Utterance(f"u{i}", f"s{i}", str(path)))
    prepared = []
    real = service.vpc_waveform
    monkeypatch.setattr(service, "vpc_waveform", lambda audio, *a: prepared.append(len(audio)) or real(audio, *a))
    embedding._resampler.cache_clear()
    context = plugin_context(seed=0, work_dir=tmp_path / "w", workers=2)
    embeddings = FolderEmbeddings(SpeechBrainParams(source=str(folder)), context, "asv")
    vectors = np.stack(embeddings.embed_utterances(utterances, "embed"))
    assert len(prepared) == len(utterances)  # the check that the waveform is usable is the waveform used
    assert embedding._resampler.cache_info().currsize == 2  # 8 and 24 kHz
    wave = audio(1.0, seed=9)
    fresh = Resample(orig_freq=8000, new_freq=16000)(torch.from_numpy(wave)).numpy()
    assert np.array_equal(embedding.toolkit_resample(wave, 8000), fresh)
    assert vectors.shape == (4, 16) and np.isfinite(vectors).all()
