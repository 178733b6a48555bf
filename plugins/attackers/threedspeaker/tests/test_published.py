"""The rebuild against the published code: key names and shapes, strict loading, the same embeddings end to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from speakerlab.models.campplus.DTDNN import CAMPPlus as PublishedCAMPPlus
from speakerlab.models.eres2net.ERes2Net import ERes2Net as PublishedERes2Net
from speakerlab.models.eres2net.ERes2Net_huge import ERes2Net as PublishedERes2NetHuge
from threedspeaker_testing import (
    EMBEDDING,
    make_encoder,
    published_fbank,
    published_network,
    tiny_params,
    voice,
    write_checkpoint,
)
from wespeaker_layout import published_shapes, wespeaker_names

from vpeval_3dspeaker.campplus import CAMPPlus
from vpeval_3dspeaker.checkpoint import from_wespeaker
from vpeval_3dspeaker.eres2net import ERes2Net

CASES = [("campplus", "3dspeaker"), ("eres2net", "3dspeaker"), ("campplus", "wespeaker"), ("eres2net", "wespeaker")]


def shapes(module: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    return {key: tuple(value.shape) for key, value in module.state_dict().items()}


@pytest.mark.parametrize(
    ("ours", "published"),
    [
        # campplus_voxceleb.bin (infer_sv.py CAMPPLUS_VOX) and campplus_cn_common.bin (CAMPPLUS_COMMON)
        (lambda: CAMPPlus(80, 512), lambda: PublishedCAMPPlus(feat_dim=80, embedding_size=512)),
        (lambda: CAMPPlus(80, 192), lambda: PublishedCAMPPlus(feat_dim=80, embedding_size=192)),
        # pretrained_eres2net.ckpt (ERes2Net_VOX) and the 3D-Speaker large model (m_channels 64, 512-d)
        (lambda: ERes2Net(80, 192), lambda: PublishedERes2Net(feat_dim=80, embedding_size=192)),
        (
            lambda: ERes2Net(80, 512, m_channels=64),
            lambda: PublishedERes2Net(feat_dim=80, embedding_size=512, m_channels=64),
        ),
        # ERes2Net_huge.py (pretrained_eres2net_aug.ckpt): its constants as params
        (
            lambda: ERes2Net(80, 192, m_channels=64, base_width=24, scale=3, expansion=4),
            lambda: PublishedERes2NetHuge(feat_dim=80, embedding_size=192),
        ),
    ],
    ids=["campplus-vox-512", "campplus-common-192", "eres2net-vox-192", "eres2net-large", "eres2net-huge"],
)
def test_published_sizes_have_the_published_key_names_and_shapes(ours, published):
    """At the published sizes (no forward: construction only), every tensor name and shape is the published one."""
    assert shapes(ours()) == shapes(published())


def test_wespeaker_eres2net_keys_are_renamed_onto_3dspeakers():
    wespeaker = {key: torch.empty(shape, device="meta") for key, shape in published_shapes("eres2net").items()}
    renamed = {k: tuple(v.shape) for k, v in from_wespeaker(wespeaker).items()}
    assert any(".conv2_1." in k for k in wespeaker)  # the names really differ
    assert renamed == shapes(ERes2Net(80, 192))


@pytest.mark.parametrize(
    ("architecture", "packaged"),
    [
        ("campplus", lambda: PublishedCAMPPlus(feat_dim=80, embedding_size=512)),
        ("eres2net", lambda: PublishedERes2Net(feat_dim=80, embedding_size=192)),
    ],
)
def test_the_packaged_networks_under_wespeakers_names_are_wespeakers_published_layout(architecture, packaged):
    """The tests write WeSpeaker's checkpoints from 3D-Speaker's packaged networks, renamed: at WeSpeaker's
    published sizes every renamed tensor name and shape is WeSpeaker's."""
    renamed = {k: tuple(v.shape) for k, v in wespeaker_names(packaged().state_dict()).items()}
    assert renamed == published_shapes(architecture)


@pytest.mark.parametrize(("architecture", "layout"), CASES, ids=["-".join(c) for c in CASES])
def test_a_published_checkpoint_gives_the_published_embedding(tmp_path, architecture, layout):
    """The folder as published, given by `source` alone (plus the tiny sizes): the layout is read from the keys, and
    embed equals the published network on the published front end's fbank."""
    folder = write_checkpoint(tmp_path / "model", architecture, layout, seed=1)
    encoder = make_encoder(architecture, tiny_params(architecture, folder), tmp_path)
    audio = voice(1.7, speaker=2)
    got = encoder.embed(audio)
    net = published_network(architecture, layout, seed=1)
    with torch.no_grad():
        want = net(published_fbank(audio, layout).unsqueeze(0))[0].numpy()
    assert encoder.layout == layout
    assert encoder.dim == EMBEDDING and got.shape == (EMBEDDING,)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_the_embedding_size_comes_from_the_checkpoint(tmp_path):
    """campplus_voxceleb.bin is 512-d and campplus_cn_common.bin 192-d: null embedding_size reads the file."""
    folder = tmp_path / "m"
    folder.mkdir()
    net = PublishedCAMPPlus(feat_dim=16, embedding_size=40, growth_rate=8, bn_size=2, init_channels=16)
    torch.save(net.state_dict(), folder / "campplus_cn_common.bin")
    encoder = make_encoder("campplus", tiny_params("campplus", folder), tmp_path)
    assert encoder.embed(voice(0.5)).shape == (40,)


def test_nested_and_data_parallel_checkpoints_load(tmp_path):
    state = published_network("campplus", "3dspeaker", seed=2).state_dict()
    nested = {"model": {f"module.{k}": v for k, v in state.items()}, "epoch": torch.tensor(3)}
    torch.save(nested, tmp_path / "checkpoint.pt")
    plain = write_checkpoint(tmp_path / "plain", "campplus", "3dspeaker", seed=2)
    audio = voice(0.8)
    a = make_encoder("campplus", tiny_params("campplus", tmp_path / "checkpoint.pt"), tmp_path).embed(audio)
    b = make_encoder("campplus", tiny_params("campplus", plain), tmp_path).embed(audio)
    np.testing.assert_array_equal(a, b)


def test_wespeaker_names_load_with_3dspeakers_front_end(tmp_path):
    """WeSpeaker's hub `campplus` / `eres2net` are 3D-Speaker models in WeSpeaker's names, which its CLI feeds the
    povey fbank of float waveforms (set_window_type('povey'), set_wavform_norm(True)): `layout: 3dspeaker`."""
    folder = write_checkpoint(tmp_path / "hub", "eres2net", "wespeaker", seed=4)
    encoder = make_encoder("eres2net", tiny_params("eres2net", folder, layout="3dspeaker"), tmp_path)
    audio = voice(1.1, speaker=3)
    net = published_network("eres2net", "wespeaker", seed=4)
    with torch.no_grad():
        want = net(published_fbank(audio, "3dspeaker").unsqueeze(0))[0].numpy()
    np.testing.assert_allclose(encoder.embed(audio), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert encoder.layout == "3dspeaker"
