"""Masked CPU batches of the SpeechBrain wav2vec2 ASR and emotion classifiers give each utterance what it gets
alone: the same transcript and the same predicted class, exactly (issue 39, item 2).

Both wav2vec2 variants: the Large models' layer-norm CNN (VPC 2024's ASR) and the base models' group-norm
CNN (wav2vec2-base, under the IEMOCAP classifiers), whose statistics padding would shift without the mask.
Lengths differ a lot within a batch (0.3 s to 2.1 s), so every batch pads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval_speech.speechbrain_asr import SpeechBrainASR
from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder, tone_noise_waves

torch = pytest.importorskip("torch")
pytest.importorskip("speechbrain")

SECONDS = (0.3, 2.1, 0.8, 1.25, 0.45, 1.9, 0.61, 1.0, 0.33, 1.6)


def audios(seed: int = 0) -> list[np.ndarray]:
    return tone_noise_waves(SECONDS, seed)


@pytest.fixture(scope="module", params=["layer", "group"])
def asr_folder(request, tmp_path_factory) -> Path:
    return tiny_encoder_asr_folder(tmp_path_factory.mktemp(f"asr-{request.param}"), norm=request.param)


@pytest.fixture(scope="module", params=["layer", "group"])
def ser_models(request, tmp_path_factory) -> Path:
    return tiny_emotion_folders(tmp_path_factory.mktemp(f"ser-{request.param}"), norm=request.param)


def asr(folder: Path, tmp_path: Path, **params) -> SpeechBrainASR:
    return SpeechBrainASR(SpeechBrainASR.Params(source=str(folder), **params), PluginContext(work_dir=tmp_path / "w"))


def test_asr_masked_batches_equal_one_at_a_time(asr_folder, tmp_path):
    batched = asr(asr_folder, tmp_path, cpu_batch_size=4)
    alone = asr(asr_folder, tmp_path, cpu_batch_size=1)
    assert batched.transcribes_many_on_cpu and alone.transcribes_many_on_cpu  # wer hands both whole chunks
    assert batched._loaded is None  # told from the YAML: a cached rerun of wer loads no model
    waves = audios()
    expected = [alone.transcribe(a).text for a in waves]  # decode() of a batch of one: VPC's transcribe_file
    assert [t.text for t in alone.transcribe_many(waves)] == expected
    assert [t.text for t in batched.transcribe_many(waves)] == expected  # exactly, and in input order
    assert len(set(expected)) > len(expected) // 2 and all(expected)  # random weights, yet texts that differ
    # the same for any batch size (one bucket holding every length)
    assert [t.text for t in asr(asr_folder, tmp_path, cpu_batch_size=16).transcribe_many(waves)] == expected


def test_asr_masked_encoder_output_within_tolerance(asr_folder, tmp_path):
    """Below the texts: the lobe's frames (layer-normed, unit scale) equal the batch of one's to 1e-5, and the
    log-probabilities after the random heads (values in the hundreds) to 1e-5 of their largest."""
    from vpeval_torch.ssl_masked import speechbrain_wav2vec2

    model = asr(asr_folder, tmp_path, cpu_batch_size=4)
    loaded = model.parts()
    lobe, rest = model.masked_parts()
    waves = audios(1)[:5]
    with torch.no_grad():
        frames_out, frames = speechbrain_wav2vec2(lobe, waves, "cpu")
        encoded = frames_out
        for module in rest:
            encoded = module(encoded)
        for b, wave in enumerate(waves):
            n = int(frames[b])
            own = lobe(torch.from_numpy(wave)[None])
            assert own.shape[1] == n
            assert torch.allclose(frames_out[b, :n], own[0], atol=1e-5, rtol=0)
            alone = loaded.encoder(torch.from_numpy(wave)[None], torch.ones(1))
            assert torch.allclose(encoded[b, :n], alone[0], atol=1e-5 * float(alone.abs().max()), rtol=0)


def test_asr_without_masked_path_transcribes_one_at_a_time(encoder_asr_folder, tmp_path, monkeypatch):
    """A folder whose layers after the lobe are not per-frame falls back to one utterance at a time."""
    import vpeval_speech.speechbrain_asr as module

    model = asr(encoder_asr_folder, tmp_path, cpu_batch_size=4)
    monkeypatch.setattr(module, "PER_FRAME", ())
    assert model.masked_parts() is None
    waves = audios()[:3]
    assert [t.text for t in model.transcribe_many(waves)] == [model.transcribe(a).text for a in waves]


def test_ser_masked_batches_equal_one_at_a_time(ser_models, tmp_path, monkeypatch):
    from vpeval_speech.speechbrain_emotion import load_classifier

    waves = audios(2)
    predicted = set()
    for fold in ("fold_1", "fold_2"):
        classifier = load_classifier(str(ser_models / fold), None, str(tmp_path / "hf")).to("cpu")
        assert classifier.batches_masked()
        expected = [classifier.classify(a, "cpu", _nothing) for a in waves]
        assert classifier.classify_many(waves, "cpu", _nothing, batch_size=4) == expected
        assert classifier.classify_many(waves, "cpu", _nothing, batch_size=1) == expected
        # the pooled vectors themselves, to 1e-5, without the noise speechbrain's StatisticsPooling adds to every
        # mean on every call (unseeded, 1e-5 to 9e-5 per entry: one at a time draws it too)
        monkeypatch.setattr(
            classifier.avg_pool, "_get_gauss_noise", lambda shape, device="cpu": torch.zeros(shape, device=device)
        )
        pooled = classifier.pooled_masked(waves[:4], "cpu")
        for row, wave in zip(pooled, waves[:4]):
            alone = classifier.pooled_masked([wave], "cpu")[0]
            assert torch.allclose(row, alone, atol=1e-5, rtol=0)
        predicted.update(expected)
    assert len(predicted) > 1  # random weights, yet several classes predicted


def _nothing():
    from contextlib import nullcontext

    return nullcontext()
