"""Running a VoicePrivacy toolkit checkout's own code inside a test, and the inputs those tests build alike
(tests/test_vpc_toolkit_training.py, tests/test_vpc_toolkit_training_2026.py, tests/test_vpc_toolkit_asv_ssl.py,
tests/test_vpc_toolkit_evaluation.py).

The toolkit's code is imported from the checkout (never copied here), its packages without their __init__ (which
imports every evaluation and its dependencies); torchaudio.load is read as its soundfile backend read files
(torchaudio 2.9+ loads only through torchcodec, not installed here).
"""

from __future__ import annotations

import contextlib
import copy
import csv
import sys
import types
from collections.abc import Iterator
from pathlib import Path

ASV_TRAIN_PACKAGES = ["evaluation", "evaluation.privacy", "evaluation.privacy.asv", "evaluation.privacy.asv.asv_train"]
# exp/asv_ssl's sizes: a WavLM of 24 layers of width 16 and the two-stream ECAPA over them
LAYERS, WIDTH, CHANNELS, OUTPUTS = 24, 16, [16, 16, 16, 16, 48], 12


@contextlib.contextmanager
def toolkit_packages(toolkit: Path, packages: list[str]) -> Iterator[None]:
    """`toolkit` on sys.path and `packages` importable from it without their __init__; on leaving, the path and
    every toolkit module (utils, evaluation) forgotten, so that the next checkout imports its own."""
    sys.path.insert(0, str(toolkit))
    try:
        for name in packages:
            module = types.ModuleType(name)
            module.__path__ = [str(toolkit / name.replace(".", "/"))]
            sys.modules[name] = module
        yield
    finally:
        sys.path.remove(str(toolkit))
        for name in [m for m in sys.modules if m in ("utils", "evaluation") or m.startswith(("utils.", "evaluation."))]:
            del sys.modules[name]


@contextlib.contextmanager
def torchaudio_reading(load) -> Iterator[None]:
    """torchaudio.load replaced by `load` (read_crop: as its soundfile backend read) while the toolkit runs."""
    import torchaudio

    torch_load = torchaudio.load
    torchaudio.load = load
    try:
        yield
    finally:
        torchaudio.load = torch_load


def cpu_run_opts() -> dict:
    """The run_opts the toolkit's training passes speechbrain, on the CPU (its own name cuda:0)."""
    return {
        "debug": False,
        "device": "cpu",
        "data_parallel_backend": False,
        "distributed_launch": False,
        "distributed_backend": "nccl",
        "find_unused_parameters": False,
        "noprogressbar": True,
    }


def brain_weights(brain) -> dict:
    """Copies of a toolkit SpeakerBrain's embedding_model and classifier weights (state dicts)."""
    return {k: copy.deepcopy(brain.modules[k].state_dict()) for k in ("embedding_model", "classifier")}


def read_crop(path: Path | str, frame_offset: int = 0, num_frames: int = -1):
    """torchaudio.load as its soundfile backend read: float32 [channels, frames] (PCM / 32768), rate; the whole
    file by default."""
    import soundfile
    import torch

    data, rate = soundfile.read(str(path), start=frame_offset, frames=num_frames, dtype="float32", always_2d=True)
    return torch.from_numpy(data.T.copy()), rate


def recording_load(crops: list):
    """A torchaudio.load that reads as read_crop and appends each crop it reads, [file name, offset, frames], to
    `crops` (whole files, as prepare_csv reads them, are not crops)."""

    def load(path, frame_offset=0, num_frames=-1, **_):
        if num_frames != -1:
            crops.append([Path(path).name, int(frame_offset), int(num_frames)])
        return read_crop(path, frame_offset, num_frames)

    return load


def speechocean_by_speaker() -> tuple[Path, dict[str, list[dict]]]:
    """speechocean762's folder and its metadata.csv rows per speaker."""
    from vpeval.testing.realdata import real_data_root

    source = real_data_root() / "speechocean762"
    with open(source / "metadata.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    by_speaker: dict[str, list[dict]] = {}
    for row in rows:
        by_speaker.setdefault(row["speaker"], []).append(row)
    return source, by_speaker


def write_kaldi_lists(folder: Path, utt2spk: list[tuple[str, str]]) -> None:
    """wav.scp (folder/wav/<utt>.wav), utt2spk and spk2utt of the (utterance, speaker) pairs."""
    (folder / "wav.scp").write_text("".join(f"{u} {folder / 'wav' / u}.wav\n" for u, _ in utt2spk))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utt2spk))
    spk2utt: dict[str, list[str]] = {}
    for u, s in utt2spk:
        spk2utt.setdefault(s, []).append(u)
    (folder / "spk2utt").write_text("".join(f"{s} {' '.join(us)}\n" for s, us in spk2utt.items()))


def write_asv_ssl(folder: Path) -> None:
    """exp/asv_ssl in the toolkit's layout at this module's sizes: WavLM-Large.pt (a UniLM {cfg, model}
    checkpoint written with s3prl's copy of UniLM's WavLM.py, torch seed 3, norms, biases and gates moved away
    from their initial values so that each one matters) and the ECAPA's embedding_model.ckpt (random weights)."""
    import torch
    from s3prl.upstream.wavlm import WavLM as unilm

    from vpeval_speechbrain.ssl import EcapaSsl, save_ssl_network
    from vpeval_speechbrain.tiny import _randomise

    cfg = {
        "extractor_mode": "layer_norm",
        "encoder_layers": LAYERS,
        "encoder_embed_dim": WIDTH,
        "encoder_ffn_embed_dim": 32,
        "encoder_attention_heads": 4,
        "layer_norm_first": True,
        "conv_feature_layers": "[(16,10,5)] + [(16,3,2)] * 4 + [(16,2,2)] * 2",
        "conv_bias": True,
        "normalize": True,
        "conv_pos": 8,
        "conv_pos_groups": 4,
        "relative_position_embedding": True,
        "num_buckets": 32,
        "max_distance": 64,
        "gru_rel_pos": True,
    }
    torch.manual_seed(3)
    config = unilm.WavLMConfig(cfg)
    model = unilm.WavLM(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name or name.endswith("bias") or "grep_a" in name:
                param.add_(0.1 * torch.randn_like(param))
    folder.mkdir(parents=True)
    torch.save({"cfg": dict(config.__dict__), "model": model.state_dict()}, folder / "WavLM-Large.pt")
    network = EcapaSsl(80, CHANNELS, LAYERS, lin_neurons=OUTPUTS).eval()
    _randomise(network, 4)
    save_ssl_network(network, folder)
