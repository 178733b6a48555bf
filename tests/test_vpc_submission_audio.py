"""A VoicePrivacy submission's audio scored as the challenge's toolkit reads it (issue 36, item 1).

The toolkit's ASV (evaluation/privacy/asv, VPC 2024 commit 400de3a) reads each file with torchaudio.load
(float32, float files unclipped), divides it by its peak at the file's own rate (utils.normalize_wave),
resamples it to 16 kHz with torchaudio.transforms.Resample and its defaults, cuts leading and trailing zeros
and calls EncoderClassifier.encode_batch; enrollment speakers are the mean of their utterances' vectors,
and a trial's score is their cosine. The reference here does exactly that with soundfile, torchaudio and
speechbrain's own EncoderClassifier on a tiny random-weight exp/asv_orig, and vpeval's per-trial scores
through `precomputed` must equal it to 1e-5 for a float32 submission peaking above 1 and a 24 kHz one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from vpeval import audio as audio_io
from vpeval.config import load_experiment_text
from vpeval.run.runner import Runner

EXPERIMENT = """\
variables:
  DATA: null
  ASV: null
name: vpc-submission-audio
seed: 0
data:
  corpus: {use: vpc, params: {root: "${DATA}", datasets: [libri_dev], train: null, utility: false}}
anonymizers:
  - use: precomputed
    label: submission
    params: {vpc: {root: "${DATA}", suffix: SUFFIX, datasets: [libri_dev], train: false, utility: false}}
attackers:
  - {use: speechbrain, label: asv_eval, params: {source: "${ASV}"}}
protocols: [O-A]
metrics: [eer]
"""
FOLDERS = ("libri_dev_enrolls", "libri_dev_trials_f", "libri_dev_trials_m")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    pytest.importorskip("speechbrain")
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_speechbrain.tiny import write_ecapa_folder

    root = tmp_path_factory.mktemp("vpc")
    data = build_vpc_tree(root, suffix="_fast", train_per_speaker=2)
    write_ecapa_folder(root / "exp" / "asv_orig", seed=5)
    for folder in FOLDERS:  # the submissions: the `_fast` audio as float32 above full scale, and at 24 kHz
        _rewrite(data / f"{folder}_fast", data / f"{folder}_float", root / "float", _louder, "FLOAT")
        _rewrite(data / f"{folder}_fast", data / f"{folder}_24k", root / "24k", _at_24k, "PCM_16")
    return root


def _louder(samples: np.ndarray, rate: int, index: int) -> tuple[np.ndarray, int]:
    return samples * np.float32((1.3 + 0.25 * (index % 3)) / np.abs(samples).max()), rate  # peaks 1.3 to 1.8


def _at_24k(samples: np.ndarray, rate: int, index: int) -> tuple[np.ndarray, int]:
    return audio_io.resample(samples, rate, 24000), 24000


def _rewrite(source: Path, target: Path, audio_dir: Path, change, subtype: str) -> None:
    shutil.copytree(source, target)
    audio_dir.mkdir(exist_ok=True)
    lines = []
    for index, line in enumerate((source / "wav.scp").read_text().splitlines()):
        uid, path = line.split(maxsplit=1)
        samples, rate = change(*sf.read(path, dtype="float32"), index)
        sf.write(audio_dir / f"{uid}.wav", samples, rate, subtype=subtype)
        lines.append(f"{uid} {audio_dir / f'{uid}.wav'}\n")
    (target / "wav.scp").write_text("".join(lines))


def _toolkit_vector(classifier, path: str) -> np.ndarray:
    """speaker_extraction.extraction_job + normalize_wave + SpeechBrainVectors.extract_vector, pyloudnorm's
    gain left out: normalize_wave divides its output by its peak, which undoes any gain."""
    import torch
    import torchaudio

    samples, rate = sf.read(path, dtype="float32")  # torchaudio.load's soundfile backend: the same samples
    wave = torch.from_numpy(samples / np.abs(samples).max())
    if rate != 16000:
        wave = torchaudio.transforms.Resample(orig_freq=rate, new_freq=16000)(wave)
    wave = torch.tensor(np.trim_zeros(wave.numpy()))
    with torch.no_grad():
        return classifier.encode_batch(wavs=wave.unsqueeze(0)).squeeze().numpy().astype(np.float64)


def _toolkit_scores(root: Path, suffix: str, savedir: Path) -> dict[tuple[str, str], float]:
    """The toolkit's O-A scores (ASV.eer_compute): original enrollment, the submission's trials."""
    from speechbrain.inference.speaker import EncoderClassifier

    classifier = EncoderClassifier.from_hparams(
        source=str(root / "exp" / "asv_orig"), savedir=str(savedir), run_opts={"device": "cpu"}
    )
    data = root / "data"

    def table(folder: Path, name: str) -> dict[str, str]:
        return dict(line.split(maxsplit=1) for line in (folder / name).read_text().splitlines())

    enrolls = data / "libri_dev_enrolls"
    by_speaker: dict[str, list[np.ndarray]] = {}
    for uid, path in table(enrolls, "wav.scp").items():
        by_speaker.setdefault(table(enrolls, "utt2spk")[uid], []).append(_toolkit_vector(classifier, path))
    speakers = {spk: np.mean(vectors, axis=0) for spk, vectors in by_speaker.items()}
    scores = {}
    for trials in ("libri_dev_trials_f", "libri_dev_trials_m"):
        paths = table(data / (trials + suffix), "wav.scp")
        for line in (data / trials / "trials").read_text().splitlines():
            spk, uid, _ = line.split()
            a, b = speakers[spk], _toolkit_vector(classifier, paths[uid])
            scores[(spk, uid)] = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    return scores


def _vpeval_scores(root: Path, suffix: str, tmp_path: Path):
    text = EXPERIMENT.replace("SUFFIX", suffix)
    variables = {"DATA": str(root / "data"), "ASV": str(root / "exp" / "asv_orig")}
    exp = load_experiment_text(text, "vpc.yaml", variables=variables)
    result = Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()
    scores_dir = result.folder / "scores"
    (entry,) = json.loads((scores_dir / "index.json").read_text())
    scores = {}
    for line in (scores_dir / entry["file"]).read_text().splitlines():
        enroll, uid, score = line.split()[:3]
        scores[(enroll.removeprefix("libri_dev_enrolls-"), uid)] = float(score)
    return scores, tmp_path / "cache"


@pytest.mark.parametrize("suffix", ["_float", "_24k"])
def test_a_submission_scores_as_the_toolkit_reads_it(tree, tmp_path, suffix):
    mine, cache = _vpeval_scores(tree, suffix, tmp_path)
    theirs = _toolkit_scores(tree, suffix, tmp_path / "savedir")
    assert set(mine) == set(theirs) and len(mine) > 20
    differences = np.array([abs(mine[k] - theirs[k]) for k in theirs])
    assert differences.max() < 1e-5, differences.max()
    # The cache holds the files as stored: float32 beyond +-1, or 24 kHz (nothing clipped, nothing resampled).
    stored = [sf.info(p) for p in cache.rglob("*.wav") if "anonymize" in str(p)]
    assert stored and all(info.subtype == "FLOAT" for info in stored)
    if suffix == "_24k":
        assert {info.samplerate for info in stored} == {24000}
    else:
        assert max(np.abs(sf.read(p, dtype="float32")[0]).max() for p in cache.rglob("*.wav")) > 1.25


def test_the_old_way_would_have_differed(tree):
    """What the test guards against: a 16-bit copy clipped at +-1, or soxr before the peak division."""
    from vpeval_speechbrain.embedding import vpc_waveform

    path = next((tree / "float").glob("*.wav"))
    samples = sf.read(path, dtype="float32")[0]
    clipped = np.clip(samples, -1, 1)
    assert np.abs(vpc_waveform(clipped) - vpc_waveform(samples)).max() > 0.05
    path = next((tree / "24k").glob("*.wav"))
    samples, rate = sf.read(path, dtype="float32")
    toolkit = vpc_waveform(samples, rate=rate)
    soxr_first = vpc_waveform(audio_io.resample(samples, rate, 16000))
    assert toolkit.shape == soxr_first.shape and np.abs(toolkit - soxr_first).max() > 1e-3
