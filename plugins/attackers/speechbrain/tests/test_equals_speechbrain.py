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


def _reference_embeddings(ref, waves) -> np.ndarray:
    """EncoderClassifier.encode_batch on each waveform, as VoicePrivacy calls it (one file at a time)."""
    out = []
    with torch.no_grad():
        for w in waves:
            torch.manual_seed(NOISE_SEED)  # the x-vector pooling noise, drawn as vpeval draws it
            out.append(ref.encode_batch(torch.from_numpy(w)).squeeze().numpy())
    return np.stack(out)


@pytest.mark.parametrize("kind", ["ecapa", "xvector"])
def test_embeddings_equal_encoder_classifier(tmp_path, folders, reference, audio, kind):
    folder = folders[kind](tmp_path / kind, seed=3)
    ref = reference(folder, tmp_path / "savedir")
    waves = [audio(s, i) for i, s in enumerate(SECONDS)]
    embedder = Embedder(load_folder(folder), batch_size=len(waves), noise_seed=NOISE_SEED)
    expected = _reference_embeddings(ref, waves)
    alone = np.stack([embedder.embed_batch([w])[0] for w in waves])
    np.testing.assert_allclose(alone, expected, rtol=0, atol=1e-5)
    # one zero-padded batch of 0.7-2.1 s with relative lengths: each row still gets its own vector
    together = embedder.embed_batch(waves)
    np.testing.assert_allclose(together, expected, rtol=0, atol=1e-5)
    np.testing.assert_allclose(embedder.embed(waves[::-1]), expected[::-1], rtol=0, atol=1e-5)  # buckets, order
    assert np.abs(alone).max() > 0.05  # random weights give non-trivial vectors


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 1 - (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize(
    "kind,channels", [("ecapa", (16, 16, 16, 16, 48)), ("ecapa", (512, 512, 512, 512, 1536)), ("xvector", None)]
)
def test_packed_batches_equal_encoder_classifier_one_at_a_time(tmp_path, folders, reference, audio, kind, channels):
    """The released layouts (asv_orig's ECAPA at its 512/1536 size too, x-vectors) run packed: each
    utterance's vector equals EncoderClassifier.encode_batch on it alone, whatever shares its batch."""
    extra = {"channels": channels} if channels else {}
    folder = folders[kind](tmp_path / kind, seed=5, **extra)
    ref = reference(folder, tmp_path / "savedir")
    waves = [audio(s, i) for i, s in enumerate([0.05, 0.7, 1.3, 2.1, 1.25, 0.4])]
    expected = _reference_embeddings(ref, waves)
    embedder = Embedder(load_folder(folder), batch_size=4, noise_seed=NOISE_SEED)
    assert embedder.packs
    together = embedder.embed(waves)  # two packed batches (batch_size 4), in the callers' order
    assert _cosine_distance(together, expected).max() < 1e-5
    np.testing.assert_allclose(together, expected, rtol=0, atol=1e-4 * np.abs(expected).max())
    np.testing.assert_allclose(embedder.embed_packed(waves[::-1]), together[::-1], rtol=0, atol=1e-5)
    assert np.abs(together).max() > 0.05


def test_other_normalisations_fall_back_to_padded_batches(tmp_path, folders, reference, audio):
    """A folder whose mean_var_norm also divides by the std is outside the packed path: padded batches,
    still equal to encode_batch one at a time."""
    folder = folders["ecapa"](tmp_path / "f", seed=2)
    text = (folder / "hyperparams.yaml").read_text().replace("std_norm: False", "std_norm: True", 1)
    (folder / "hyperparams.yaml").write_text(text)
    ref = reference(folder, tmp_path / "savedir")
    waves = [audio(s, i) for i, s in enumerate(SECONDS)]
    embedder = Embedder(load_folder(folder), batch_size=4, noise_seed=NOISE_SEED)
    assert not embedder.packs
    np.testing.assert_allclose(embedder.embed(waves), _reference_embeddings(ref, waves), rtol=0, atol=1e-5)


def test_speechbrain_padding_alone_would_not_be_enough(tmp_path, folders, reference, audio):
    """Why masking.py exists: encode_batch on a padded batch (its own padding) moves the shorter rows."""
    folder = folders["ecapa"](tmp_path / "f", seed=3)
    ref = reference(folder, tmp_path / "savedir")
    waves = [audio(s, i) for i, s in enumerate(SECONDS)]
    wavs, lengths = pad_batch(waves)
    with torch.no_grad():
        padded = ref.encode_batch(wavs, lengths.float() / wavs.shape[1]).squeeze(1).numpy()
    assert np.abs(padded - _reference_embeddings(ref, waves)).max() > 1e-3


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
    model = load_folder(folder, with_classifier=True)
    assert load_folder(folder).classifier is None  # embeddings never build it
    ref = reference(folder, tmp_path / "savedir")
    for name, tensor in ref.mods.classifier.state_dict().items():
        torch.testing.assert_close(model.classifier.state_dict()[name], tensor)


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
