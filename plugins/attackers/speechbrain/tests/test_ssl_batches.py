"""asv_ssl (VPC 2026) embeds in WavLM length buckets on the CPU with each file's embedding what it gets alone
(issue 39, item 2): WavLM runs masked batches (the wavlm frontend: its own normalisation, the CNN's group norm
over its own frames, the attention mask), the two-stream ECAPA one waveform at a time.

The base model's group-norm CNN is the case that needs the mask: transformers' own padded forward takes the
group norm's statistics over the padding too (checked below to move the frames), so a plain padded batch would
not be the per-file numbers. Tolerance: 1e-5 on unit-length embeddings (and cosine scores)."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
import torch

from vpeval.plugins import plugin_context
from vpeval.types import Utterance
from vpeval_speechbrain.params import SpeechBrainParams
from vpeval_speechbrain.service import FolderEmbeddings
from vpeval_speechbrain.tiny import write_asv_ssl_folder

SECONDS = [0.6, 2.3, 1.1, 0.9, 1.7, 0.45, 2.0, 1.3, 0.7, 1.5]


@pytest.fixture(params=["group", "layer"])
def ssl_folders(request, tmp_path):
    return write_asv_ssl_folder(tmp_path / "asv_ssl", tmp_path / f"wavlm-{request.param}", norm=request.param)


def corpus(tmp_path, audio) -> list[Utterance]:
    utterances = []
    for i, seconds in enumerate(SECONDS):
        path = tmp_path / f"u{i}.wav"
        sf.write(path, audio(seconds, seed=i), 16000, subtype="FLOAT")
        utterances.append(Utterance(f"u{i}", f"s{i % 3}", str(path), duration=seconds))
    return utterances


def embeddings(folder, wavlm, tmp_path, name: str, batch_size: int, workers: int = 1) -> FolderEmbeddings:
    context = plugin_context(seed=0, work_dir=tmp_path / name, workers=workers)
    params = SpeechBrainParams(source=str(folder), ssl_model=str(wavlm), batch_size=batch_size)
    return FolderEmbeddings(params, context, "asv_ssl")


def test_asv_ssl_buckets_equal_one_file_at_a_time(ssl_folders, tmp_path, audio):
    folder, wavlm = ssl_folders
    utterances = corpus(tmp_path, audio)
    alone = embeddings(folder, wavlm, tmp_path, "alone", batch_size=1)
    alone.prepare()
    assert not alone.batches_here  # batch_size 1: the toolkit's call, one file per call in the workers
    expected = np.stack(alone.embed_utterances(utterances, "embed"))
    batched = embeddings(folder, wavlm, tmp_path, "batched", batch_size=4)
    batched.prepare()
    assert batched.batches_here and batched.prepare().frontend.params.batch_size == 4
    got = np.stack(batched.embed_utterances(utterances, "embed"))
    assert got.shape == expected.shape == (len(SECONDS), 12)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
    scores = got @ got.T  # cosine scores of every pair, unit-length vectors
    np.testing.assert_allclose(scores, expected @ expected.T, rtol=0, atol=1e-5)
    assert np.abs(expected @ expected.T - np.eye(len(SECONDS))).max() > 1e-2  # embeddings that differ
    # two workers embedding buckets side by side (threads sharing the WavLM's hooks): the same numbers
    two = embeddings(folder, wavlm, tmp_path, "two", batch_size=4, workers=2)
    np.testing.assert_allclose(np.stack(two.embed_utterances(utterances, "embed")), got, rtol=0, atol=1e-6)


def test_group_norm_wavlm_is_not_padding_invariant_unmasked(tmp_path):
    """Why the mask: the base model's own padded forward moves a short file's frames (its group norm sees the
    padding), while the frontend's masked batch keeps them."""
    from transformers import WavLMModel

    _, wavlm = write_asv_ssl_folder(tmp_path / "asv_ssl", tmp_path / "wavlm", norm="group")
    model = WavLMModel.from_pretrained(wavlm).eval()
    rng = np.random.default_rng(0)
    short, long = (rng.normal(0, 0.1, n).astype(np.float32) for n in (8000, 24000))
    padded = torch.zeros(2, 24000)
    padded[0, :8000], padded[1] = torch.from_numpy(short), torch.from_numpy(long)
    with torch.no_grad():
        alone = model(torch.from_numpy(short)[None]).last_hidden_state[0]
        unmasked = model(padded).last_hidden_state[0, : alone.shape[0]]
    assert (unmasked - alone).abs().max() > 1e-3
    frontend = plugin_context().get("frontend", "wavlm", {"model": str(wavlm), "layers": [-1], "batch_size": 2})
    batch = frontend.encode_batch([short, long])[0].features
    single = frontend.encode_batch([short])[0].features
    np.testing.assert_allclose(batch, single, rtol=0, atol=1e-5)
