"""DAST as published (issue 26): Muon only on hidden matrices, SpecAugment on both streams, the SSL stream
from a frontend plugin (the paper's WavLM-Large through the wavlm frontend), and the three stages reading
three corpora in one experiment (Stage II from pre-converted voice-conversion corpora)."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from vpeval.api import Frontend, PluginContext
from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError, DataError
from vpeval.plugins import plugin_context
from vpeval.testing.dummies import make_corpus
from vpeval.types import FrontendOutput, TrainingData, TrainingStage
from vpeval_dast.attacker import DastAttacker
from vpeval_dast.training import AamHead, convolutions_as_matrices, muon_groups

# -- Muon as its authors use it --------------------------------------------------------------------


def test_muon_takes_hidden_matrices_only(tmp_path, tiny, tiny_wavlm):
    params = DastAttacker.Params(**tiny, fusion="mid", ssl={"kind": "wavlm", "path": str(tiny_wavlm)})
    attacker = DastAttacker(params, plugin_context(seed=0, work_dir=tmp_path))
    network = attacker._new_embedder().network
    head = AamHead(params.embedding_dim, 5, params.margin, params.scale)
    with convolutions_as_matrices(network):
        muon, adamw = muon_groups(network, head)
        named = [*network.named_parameters(), *(("head." + n, p) for n, p in head.named_parameters())]
        names = {id(p): n for n, p in named}
        muon_names = {names[id(p)] for p in muon}
        adamw_names = {names[id(p)] for p in adamw}
        assert all(p.ndim == 2 for p in muon)
        assert {"head.classifier.weight", "embedding.weight"} <= adamw_names  # the output layers
        assert all(p.ndim == 1 for p in adamw if names[id(p)] not in {"head.classifier.weight", "embedding.weight"})
        assert "layer_weights.logits" in adamw_names and "embedding.bias" in adamw_names
        convolutions = [n for n in muon_names if "conv" in n and n.endswith("original")]
        assert len(convolutions) > 20  # every flattened convolution of both encoders and the pooling
        assert len(muon) + len(adamw) == sum(1 for _ in network.parameters()) + sum(1 for _ in head.parameters())
        assert not muon_names & adamw_names


# -- SpecAugment on both streams -------------------------------------------------------------------


@pytest.mark.parametrize(("streams", "ssl_masked"), [("both", True), ("fbank", False)])
def test_specaugment_masks_both_streams(streams, ssl_masked, tmp_path, tiny, tiny_wavlm):
    params = DastAttacker.Params(
        **{**tiny, "time_mask_width": 60, "freq_mask_width": 20},
        fusion="mid",
        ssl={"kind": "wavlm", "path": str(tiny_wavlm)},
        specaugment_streams=streams,
    )
    attacker = DastAttacker(params, plugin_context(seed=0, work_dir=tmp_path))
    embedder = attacker._new_embedder()
    waves = torch.randn(6, 32000) * 0.1
    fbank, hidden = embedder.inputs(waves, torch.Generator().manual_seed(0))
    _, plain = embedder.inputs(waves)
    assert (fbank == 0).any()
    zero = hidden == 0
    assert bool(zero.any()) == ssl_masked
    if ssl_masked:
        assert torch.equal(zero, zero[:1].expand_as(zero))  # the same masks on every layer
        masked_frames = zero[0].all(dim=2).sum(dim=1)  # per crop
        assert masked_frames.max() <= 60 // 2  # 60 Fbank frames (0.6 s) are 30 frames at 50/s
        masked_channels = zero[0].all(dim=1).sum(dim=1)
        assert masked_channels.max() <= round(20 * 64 / params.n_mels)
        torch.testing.assert_close(hidden[~zero], plain[~zero])


# -- the SSL stream from a frontend plugin ---------------------------------------------------------


class LayeredFrontend(Frontend):
    """A frontend exposing 3 layers x 4 features at 50 frames/s, as [T, L x D] with its layer count."""

    name = "layered"
    frame_rate = 50.0
    layer_count = 3
    calls: list[int] = []

    def encode(self, audio):
        return self.encode_batch([audio])[0]

    def encode_batch(self, audios):
        LayeredFrontend.calls.append(len(audios))
        out = []
        for audio in audios:
            frames = np.asarray(audio, np.float32)[: len(audio) // 320 * 320].reshape(-1, 320)
            layers = [frames[:, :4] * (1 + k) + k for k in range(3)]
            out.append(FrontendOutput(self.frame_rate, features=np.concatenate(layers, axis=1)))
        return out


def test_ssl_stream_from_a_frontend_plugin(train_corpus, tmp_path, tiny):
    asked = []

    def factory(kind, name, params):
        asked.append((kind, name, params))
        return LayeredFrontend()

    context = PluginContext(seed=0, work_dir=tmp_path, plugin_factory=factory)
    params = DastAttacker.Params(
        **{**tiny, "stage1": {**tiny["stage1"], "epochs": 1}},
        fusion="ssl",
        ssl={"kind": "frontend", "frontend": "wavlm", "frontend_params": {"model": "/models/wavlm-large"}},
    )
    attacker = DastAttacker(params, context)
    config = attacker.network_config()
    assert (config.ssl_layers, config.ssl_dim) == (3, 4)
    assert asked == [("frontend", "wavlm", {"model": "/models/wavlm-large"})]
    waves = torch.randn(2, 16000)
    hidden = attacker._ssl.hidden_states(waves)
    assert hidden.shape == (3, 2, 50, 4)
    first = waves[0, :320].numpy()
    np.testing.assert_allclose(hidden[2, 0, 0].numpy(), first[:4] * 3 + 2, rtol=1e-6)  # layer 2 of frame 0
    LayeredFrontend.calls.clear()
    attacker.train(TrainingData([TrainingStage("original", train_corpus)]))
    assert LayeredFrontend.calls and max(LayeredFrontend.calls) > 1  # batches of crops, not one at a time


def test_ssl_kind_frontend_params_are_checked():
    with pytest.raises(ValidationError, match="needs `frontend"):
        DastAttacker.Params(ssl={"kind": "frontend"})
    with pytest.raises(ValidationError, match="frontend_params are for ssl kind frontend"):
        DastAttacker.Params(ssl={"kind": "whisper-ct2", "frontend_params": {"model": "x"}})


# -- three corpora, one experiment --------------------------------------------------------------------


def write_manifest(corpus, path):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "path", "speaker", "duration_s"])
        for u in corpus.utterances:
            writer.writerow([u.id, u.path, u.speaker, u.duration])
    return str(path)


@pytest.fixture(scope="module")
def three_corpora(tmp_path_factory):
    """Stage I (VoxCeleb2-like), Stage II (one converted system, SSTC-like), Stage III (anonymized) manifests."""
    folder = tmp_path_factory.mktemp("corpora")
    made = {}
    for name, seed, speakers in (("vox", 11, 5), ("vc1", 12, 4), ("anon", 13, 3)):
        corpus = make_corpus(folder / name, speakers=speakers, utterances=3, seconds=1.2, seed=seed, name=name)
        made[name] = write_manifest(corpus, folder / f"{name}.csv")
    return made


def test_three_stages_read_three_corpora(three_corpora, train_corpus, tmp_path, tiny):
    quick = {"epochs": 1, "batch_size": 4, "grad_accumulation": 1}
    params = DastAttacker.Params(
        **{
            **tiny,
            "fusion": "fbank",
            "stages": ["I", "II", "III"],
            "stage1": {**quick, "corpus": {"use": "manifest", "params": {"path": three_corpora["vox"]}}},
            "stage2": quick,
            "stage3": {**quick, "corpus": {"use": "manifest", "params": {"path": three_corpora["anon"]}}},
            "stage2_corpora": [{"use": "manifest", "params": {"path": three_corpora["vc1"]}, "label": "freevc"}],
        }
    )
    attacker = DastAttacker(params, plugin_context(seed=0, work_dir=tmp_path))
    data = TrainingData([TrainingStage("original", train_corpus)])
    stages = attacker.stage_utterances(data)
    assert {u.speaker for u in stages["I"]} == {f"spk{i:03d}" for i in range(5)}
    assert len(stages["II"]) == 12 and all(u.id.startswith("freevc/") for u in stages["II"])
    assert len(stages["III"]) == 9 and all("anon" in u.path for u in stages["III"])
    assert not any(u.path in {t.path for t in train_corpus.utterances} for s in stages.values() for u in s)
    attacker.train(data)
    assert attacker.stages_done == ["I", "II", "III"]
    assert [r.speakers for r in attacker.stage_records] == [5, 4, 3]
    # with every stage on its own corpus, the core's speech is not needed at all: anonymized is enough
    attacker.check_data(TrainingData([TrainingStage("mcadams", train_corpus)]))


def test_stage_corpora_are_validated(tiny):
    with pytest.raises(ValidationError, match="stage2_corpora"):
        DastAttacker.Params(**{**tiny, "stage2": {"corpus": {"use": "manifest", "params": {"path": "x.csv"}}}})
    with pytest.raises(ValidationError, match="stage2_anonymizers or one converted corpus"):
        DastAttacker.Params(**{**tiny, "stages": ["II"]})
    only_corpora = DastAttacker.Params(
        **{**tiny, "stages": ["II"], "stage2_corpora": [{"use": "manifest", "params": {"path": "x.csv"}}]}
    )
    assert only_corpora.stage2_corpora[0].name == "manifest"
    # a Stage II corpus labelled like a target is refused like a target anonymizer
    errors = DastAttacker.check_experiment(
        {"stages": ["II"], "stage2_corpora": [{"use": "manifest", "params": {"path": "x"}, "label": "mcadams"}]},
        {"mcadams-0.8": ["mcadams"]},
    )
    assert len(errors) == 1 and "stage2_corpora[0]" in errors[0]
    # Stage III without train_on: anonymized and without a corpus: one sentence naming both remedies
    attacker = DastAttacker(DastAttacker.Params(**{**tiny, "stages": ["III"]}))
    with pytest.raises(DataError, match="stage3.corpus"):
        attacker.check_data(TrainingData([]))


EXPERIMENT = """\
name: dast-corpora
seed: 0
data:
  corpus: {{use: synth, params: {{preset: tiny}}}}
anonymizers: [{{use: mcadams}}]
attackers:
  - use: dast
    params:
      fusion: fbank
      stages: [I, II]
      stage1: {{corpus: {{use: {stage1}, params: {{path: vox.csv}}}}}}
      stage2_corpora: [{{use: manifest, params: {{path: vc.csv, {extra}}}}}]
protocols: [O-O]
metrics: [eer]
"""


def test_validate_names_the_corpus_field(tmp_path):
    with pytest.raises(ConfigError) as raised:
        load_experiment_text(EXPERIMENT.format(stage1="manifets", extra="columns: 1"), str(tmp_path / "e.yaml"))
    text = str(raised.value)
    assert "manifets" in text and "manifest" in text  # the unknown name and the nearest installed one
    assert "columns" in text  # the converted corpus's parameters are checked by the manifest plugin
