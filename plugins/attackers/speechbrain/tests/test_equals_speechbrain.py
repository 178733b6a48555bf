"""vpeval's embeddings equal speechbrain's own EncoderClassifier on the same folder (the reference)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval_speechbrain.build import load_folder
from vpeval_speechbrain.embedding import Embedder, vpc_waveform
from vpeval_torch.batching import pad_batch

SECONDS = [0.7, 1.3, 2.1, 1.25]
NOISE_SEED = 11


def _reference_embeddings(ref, waves, batched: bool) -> np.ndarray:
    with torch.no_grad():
        if not batched:
            out = []
            for w in waves:
                torch.manual_seed(NOISE_SEED)  # the x-vector pooling noise, drawn as vpeval draws it
                out.append(ref.encode_batch(torch.from_numpy(w)).squeeze().numpy())
            return np.stack(out)
        wavs, lengths = pad_batch(waves)
        torch.manual_seed(NOISE_SEED)
        return ref.encode_batch(wavs, lengths.float() / wavs.shape[1]).squeeze(1).numpy()


@pytest.mark.parametrize("kind", ["ecapa", "xvector"])
def test_embeddings_equal_encoder_classifier(tmp_path, folders, reference, audio, kind):
    folder = folders[kind](tmp_path / kind, seed=3)
    ref = reference(folder, tmp_path / "savedir")
    waves = [audio(s, i) for i, s in enumerate(SECONDS)]
    embedder = Embedder(load_folder(folder), batch_size=len(waves), noise_seed=NOISE_SEED)
    alone = np.stack([embedder.embed_batch([w])[0] for w in waves])
    np.testing.assert_allclose(alone, _reference_embeddings(ref, waves, batched=False), rtol=0, atol=1e-5)
    together = embedder.embed_batch(waves)  # one zero-padded batch with relative lengths, as encode_batch
    np.testing.assert_allclose(together, _reference_embeddings(ref, waves, batched=True), rtol=0, atol=1e-5)
    assert np.abs(alone).max() > 0.05  # random weights give non-trivial vectors


def test_embedding_normalisation_equals_encode_batch_normalize(tmp_path, folders, reference, audio):
    folder = folders["ecapa"](tmp_path / "f", emb_norm=True, classifier=True)
    ref = reference(folder, tmp_path / "savedir")
    wave = audio(1.1, 4)
    # mean_var_norm_emb is not among the yaml's `modules`, so EncoderClassifier leaves it in training mode
    # and each normalize=True call would first fold the embedding into the global statistics; vpeval
    # applies the saved statistics as they are (eval mode).
    ref.hparams.mean_var_norm_emb.eval()
    mine = Embedder(load_folder(folder), normalize_embeddings=True).embed_batch([wave])[0]
    with torch.no_grad():
        theirs = ref.encode_batch(torch.from_numpy(wave), normalize=True).squeeze().numpy()
    np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)
    plain = Embedder(load_folder(folder)).embed_batch([wave])[0]
    assert np.abs(plain - mine).max() > 1e-2  # the statistics were loaded and applied


def test_classifier_weights_load(tmp_path, folders, reference):
    folder = folders["ecapa"](tmp_path / "f", classifier=True)
    model = load_folder(folder)
    ref = reference(folder, tmp_path / "savedir")
    for name, tensor in ref.mods.classifier.state_dict().items():
        torch.testing.assert_close(model.classifier.state_dict()[name], tensor)


def test_batched_buckets_stay_close_to_alone(tmp_path, folders, audio):
    """Zero padding reaches the convolutions at a shorter waveform's end, so a padded batch is not exactly
    the waveform alone: measured on these random weights, max cosine distance 5e-4 for 0.7-2.1 s in one
    batch; length buckets keep lengths together (here within 10 %), which the bound below holds to."""
    embedder = Embedder(load_folder(folders["ecapa"](tmp_path / "f")), batch_size=3)
    waves = [audio(s, i) for i, s in enumerate([1.0, 1.05, 1.1, 2.0, 2.1, 2.15])]
    alone = np.stack([embedder.embed_batch([w])[0] for w in waves])
    bucketed = embedder.embed(waves)
    cosine = (alone * bucketed).sum(1) / np.linalg.norm(alone, axis=1) / np.linalg.norm(bucketed, axis=1)
    assert (1 - cosine).max() < 1e-3, 1 - cosine
    np.testing.assert_array_equal(bucketed[:3], embedder.embed_batch(waves[:3]))  # the buckets are these


def test_vpc_preprocessing_peak_and_zero_trimming(tmp_path, folders, reference, audio):
    """VPC divides by the peak and cuts leading/trailing zeros before encode_batch."""
    folder = folders["ecapa"](tmp_path / "f")
    ref = reference(folder, tmp_path / "savedir")
    wave = audio(1.2, 2) * 0.1
    padded = np.concatenate([np.zeros(3000, np.float32), wave, np.zeros(1234, np.float32)])
    prepared = vpc_waveform(padded)
    assert prepared.size == wave.size and np.abs(prepared).max() == pytest.approx(1.0)
    mine = Embedder(load_folder(folder)).embed_batch([prepared])[0]
    expected = np.trim_zeros(padded.astype(np.float64) / np.abs(padded).max()).astype(np.float32)
    with torch.no_grad():
        theirs = ref.encode_batch(torch.from_numpy(expected)).squeeze().numpy()
    np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)
