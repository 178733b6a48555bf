"""Through the core: the ECAPA as the release extracts vectors, the requested vector routed from the
embedding anonymizer into the generator, and `vpeval validate` on a missing folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sslsas_testing import shared, speech

from vpeval.api import Voice
from vpeval.plugins import plugin_context
from vpeval_sslsas.anonymizer import synthesize

SELECTION = {"farthest": 2, "select": 2}
RELEASE, POOL = shared()


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    return plugin_context(seed=0, work_dir=tmp_path_factory.mktemp("sslsas-work"))


def test_ecapa_equals_the_release_extractor(context):
    """extract_emb.py's compute_embedding: speechbrain Fbank(80), InputNormalization(sentence,
    std_norm=False), ECAPA_TDNN(channels from the yaml, here the tiny file's), raw output."""
    from speechbrain.lobes.features import Fbank
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN
    from speechbrain.processing.features import InputNormalization

    audio = speech(1.2, seed=7)
    ours = context.get("encoder", "ssl-sas-ecapa", {"model": RELEASE}).embed(audio)
    network = ECAPA_TDNN(80, channels=[16, 16, 16, 16, 48], attention_channels=8, lin_neurons=192)
    network.load_state_dict(torch.load(Path(RELEASE) / "ECAPA-TDNN" / "embedding_model.ckpt", weights_only=True))
    network.eval()
    with torch.no_grad():
        wav = torch.from_numpy(audio)[None]
        lens = torch.ones(1)
        feats = InputNormalization(norm_type="sentence", std_norm=False)(Fbank(n_mels=80)(wav), lens)
        reference = network(feats, lens).squeeze(1)[0].numpy()
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-5)


def test_the_requested_vector_is_the_embedding_anonymizers(context):
    params = {"model": RELEASE, "pool": POOL, "anonymizer": "selection", "anonymizer_params": SELECTION}
    anonymizer = context.get("anonymizer", "ssl-sas", params)
    anonymizer.prepare()
    audio = speech(0.8, seed=8)
    out = anonymizer.anonymize(audio, 16000, Voice("u", "utterance", np.random.default_rng(0)))
    # the same vector, computed outside: the release's ECAPA, then selection in that space
    encoder = {"use": "ssl-sas-ecapa", "params": {"model": RELEASE}}
    selection = context.get("anonymizer", "selection", {**SELECTION, "pool": POOL, "encoder": encoder})
    selection.prepare()
    x = context.get("encoder", "ssl-sas-ecapa", {"model": RELEASE}).embed(audio)
    z = selection.anonymize_embeddings(x[None], [Voice("u", "utterance", np.random.default_rng(0))])[0]
    expected = synthesize(anonymizer._content, anonymizer._generator, audio, z, anonymizer.speaker_dim, context)
    expected = expected / np.abs(expected).max()  # full-scale, as the release writes it
    np.testing.assert_allclose(out, expected, atol=1e-5)
    assert abs(float(np.abs(out).max()) - 1.0) < 1e-6
    # a vector that is not z speaks differently
    other = synthesize(anonymizer._content, anonymizer._generator, audio, x, anonymizer.speaker_dim, context)
    assert np.abs(other / np.abs(other).max() - out).max() > 1e-3


def test_other_rates_keep_length_and_rate(context):
    params = {
        "model": RELEASE,
        "pool": POOL,
        "anonymizer": "selection",
        "anonymizer_params": SELECTION,
        "output_level": "source-peak",
    }
    anonymizer = context.get("anonymizer", "ssl-sas", params)
    audio = speech(0.7, seed=9, rate=22050)
    out = anonymizer.anonymize(audio, 22050, Voice("v", "utterance", np.random.default_rng(1)))
    assert out.shape == audio.shape
    assert abs(float(np.abs(out).max()) - float(np.abs(audio).max())) < 1e-5


def test_validate_exits_2_naming_each_missing_file(tmp_path):
    model = tmp_path / "pretrained_models_anon_xv"
    (model / "HiFi-GAN" / "libri_tts_clean_100_fbank_xv_ssl_freeze").mkdir(parents=True)
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        "name: sslsas-missing\n"
        "data:\n  corpus: {use: synth, params: {preset: tiny}}\n"
        f"anonymizers:\n  - {{use: ssl-sas, params: {{model: {model}}}}}\n"
        "attackers: [ge2e]\nprotocols: [O-A]\nmetrics: [eer]\n"
    )
    vpeval = Path(sys.executable).parent / "vpeval"
    done = subprocess.run([str(vpeval), "validate", str(experiment)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    text = done.stdout + done.stderr
    for name in ("config.json", "g_*", "soft_model.pt", "embedding_model.ckpt"):
        assert text.count(name) == 1, (name, text)
