"""Semi-informed training against the VoicePrivacy 2024 toolkit's own training code (issue 36, item 5).

The toolkit trains ASV_eval^anon with evaluation/privacy/asv/asv_train/train_speaker_embeddings.py: prepare_libri
(utterances shuffled and split 90/10 into train/dev, each file listed once per whole `sentence_len` chunk),
ASVDatasetGenerator (each listed chunk read as a random `sentence_len` crop of its file), SpeakerBrain
(Fbank, sentence mean normalisation, ECAPA-TDNN, AAM softmax 0.2/30, Adam with weight decay 2e-6,
CyclicLRScheduler stepped in compute_objectives, speechbrain's Brain clipping gradients at norm 5) and
train_ecapa_tdnn_small.yaml. vpeval trains with `speechbrain-train`, recipe vpc2024 (the asv plugin's loop).

Here the toolkit's own train_asv_speaker_embeddings (Voice-Privacy-Challenge-2024 commit 400de3a) runs on the
CPU (run_opts device cpu: its own run_opts name cuda:0) on a tiny train-clean-360 stand-in (speechocean762's
real 16 kHz speech, LibriSpeech file names), with the recipe's YAML loaded by hyperpyyaml and these overrides:
the tiny folder's network sizes, sentence_len 1.0 s, batch 16, 2 epochs, cyclic step_size 4 (so the learning
rate reaches lr within the run), out_n_neurons = the 6 speakers, num_workers 0, python's random seeded (the
toolkit leaves it unseeded). Recorded: the crops its DataLoader read (file, offset) per batch, its labels, its
losses, and its weights before and after. vpeval's loop then gets the same initial weights and the same crops
and labels (its epoch loader and initial-weight draws replaced, everything else as the recipe runs it).
Substitution: torchaudio.load is its soundfile reading (torchaudio 2.9+ loads only through torchcodec).

- test_replayed_toolkit_batches_train_the_same_weights (always): against tests/data/vpc_toolkit_training.json,
  made by scripts/vpc_toolkit_training_reference.py; the toolkit's initial weights are rebuilt as its YAML
  draws them (torch seed 1986, ECAPA then classifier), which the live test checks.
- test_the_toolkit_run_here (VPC_TOOLKIT_2024 set to a 400de3a checkout; pandas importable): the same, live,
  every weight compared.
"""

from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
from vpc_toolkit_loading import (
    ASV_TRAIN_PACKAGES,
    brain_weights,
    cpu_run_opts,
    read_crop,
    recording_load,
    speechocean_by_speaker,
    toolkit_packages,
    write_kaldi_lists,
)

FIXTURE = Path(__file__).parent / "data" / "vpc_toolkit_training.json"
HPARAMS = "evaluation/privacy/asv/asv_train/hparams/train_ecapa_tdnn_small.yaml"
SPEAKERS, PER_SPEAKER = 6, 4
CHANNELS, DIM = (16, 16, 16, 16, 48), 16
EPOCHS, BATCH, CROP, STEP_SIZE, LR = 2, 16, 1.0, 4, 0.01
TOOLKIT_SEED = 1986  # train_ecapa_tdnn_small.yaml's `seed`, applied before its modules are built
LOSS_TOLERANCE = 1e-4  # per step, absolute (the same machine gives 0: bit-identical steps)
MOTION_TOLERANCE = 1e-4  # relative, per tensor: the L2 norm and sum of (final - initial) weights


def build_train_folder(
    root: Path, speakers: slice = slice(0, SPEAKERS), per_speaker: int = PER_SPEAKER, name: str = "train-clean-360_x"
) -> Path:
    """A Kaldi train-clean-360<suffix> stand-in: 16-bit WAVs named <spk>-<chapter>-<utt>.wav (prepare_csv takes
    the speaker from the file name), wav.scp, utt2spk, spk2utt; speechocean762's speakers `speakers` (sorted)."""
    import soundfile

    source, by_speaker = speechocean_by_speaker()
    folder = Path(root) / "data" / name
    (folder / "wav").mkdir(parents=True, exist_ok=True)
    utt2spk = []
    for speaker in sorted(by_speaker)[speakers]:
        sid = speaker.replace("spk", "")
        for i, row in enumerate(sorted(by_speaker[speaker], key=lambda r: r["path"])[:per_speaker]):
            utt = f"{sid}-1-{i:04d}"
            audio, rate = soundfile.read(source / row["path"], dtype="int16")
            soundfile.write(folder / "wav" / f"{utt}.wav", audio, rate, subtype="PCM_16")
            utt2spk.append((utt, sid))
    write_kaldi_lists(folder, utt2spk)
    return folder


def toolkit_training(toolkit: Path, folder: Path, work: Path, **settings) -> dict:
    """Run the toolkit's train_asv_speaker_embeddings on `folder`; return what it read, computed and trained.
    `settings` replace this test's (speakers, epochs, batch, crop, step_size, seed: the YAML's torch seed,
    python_seed, channels, dim)."""
    import torch
    import torchaudio

    with toolkit_packages(toolkit, ASV_TRAIN_PACKAGES):
        from evaluation.privacy.asv.asv_train import train_speaker_embeddings as tse

        run = {
            "speakers": SPEAKERS,
            "epochs": EPOCHS,
            "batch": BATCH,
            "crop": CROP,
            "step_size": STEP_SIZE,
            "seed": TOOLKIT_SEED,
            "python_seed": 0,
            "channels": CHANNELS,
            "dim": DIM,
            **settings,
        }
        brain_class = tse.SpeakerBrain
        record: dict = {"batches": [], "losses": [], "lrs": []}
        pending: list = []
        brains: list = []
        originals = {k: getattr(brain_class, k) for k in ("on_fit_start", "compute_forward", "fit_batch")}

        def on_fit_start(self):
            originals["on_fit_start"](self)
            brains.append(self)  # the Brain being trained
            record["initial"] = brain_weights(self)

        def compute_forward(self, batch, stage):
            if stage == tse.sb.Stage.TRAIN:
                crops = pending[-len(batch.id) :]
                waves = batch.sig[0]
                for crop, wave in zip(crops, waves):  # the recorded reads are this batch's samples
                    assert torch.equal(read_crop(folder / "wav" / crop[0], crop[1], crop[2])[0][0], wave)
                labels = batch.spk_id_encoded[0].reshape(-1).tolist()
                record["batches"].append(
                    {"epoch": self.hparams.epoch_counter.current, "crops": crops, "labels": labels}
                )
            pending.clear()
            return originals["compute_forward"](self, batch, stage)

        def fit_batch(self, batch):
            loss = originals["fit_batch"](self, batch)
            record["losses"].append(float(loss))
            record["lrs"].append(float(self.optimizer.param_groups[0]["lr"]))
            return loss

        for k, f in (("on_fit_start", on_fit_start), ("compute_forward", compute_forward), ("fit_batch", fit_batch)):
            setattr(brain_class, k, f)
        torch_load = torchaudio.load
        torchaudio.load = recording_load(pending)  # the crops of audio_pipeline (prepare_csv reads whole files)
        # prepare_libri's shuffle and the crops' random.randint (the toolkit does not seed them)
        random.seed(run["python_seed"])
        try:
            # what asv_train_speechbrain passes (configs/eval_post.yaml's training block), scaled down
            hparams = {
                "pretrained_path": "None",
                "seed": run["seed"],
                "batch_size": run["batch"],
                "lr": LR,
                "num_utt": "ALL",
                "num_spk": "ALL",
                "utt_selected_ways": "spk-diverse-sess",
                "number_of_epochs": run["epochs"],
                "data_folder": str(folder),
                "output_folder": str(work),
                "num_workers": 0,
                "out_n_neurons": run["speakers"],
                "sentence_len": run["crop"],
                "step_size": run["step_size"],
                "embedding_model": {"channels": list(run["channels"]), "lin_neurons": run["dim"]},
                "classifier": {"input_size": run["dim"]},
            }
            tse.train_asv_speaker_embeddings(str(toolkit / HPARAMS), hparams, cpu_run_opts())
            record["final"] = brain_weights(brains[-1])
            record["chunks"] = {}  # prepare_csv's listing: segments per file, train and dev
            for split in ("train", "dev"):
                with open(work / f"{split}.csv", newline="") as f:
                    for row in csv.DictReader(f):
                        name = Path(row["wav"]).name
                        record["chunks"].setdefault(split, {}).setdefault(name, 0)
                        record["chunks"][split][name] += 1
            record["label_encoder"] = (work / "label_encoder.txt").read_text()
            return record
        finally:
            torchaudio.load = torch_load
            for k, f in originals.items():
                setattr(brain_class, k, f)


def toolkit_initial_weights() -> dict:
    """The weights train_ecapa_tdnn_small.yaml draws: torch.manual_seed(seed), then its modules in file order
    (Fbank has none; the ECAPA-TDNN, then the classifier)."""
    import torch
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN, Classifier

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TOOLKIT_SEED)
        model = ECAPA_TDNN(
            80,
            channels=list(CHANNELS),
            kernel_sizes=[5, 3, 3, 3, 1],
            dilations=[1, 2, 3, 4, 1],
            attention_channels=128,
            lin_neurons=DIM,
        )
        classifier = Classifier(input_size=DIM, out_neurons=SPEAKERS)
    return {"embedding_model": model.state_dict(), "classifier": classifier.state_dict()}


def vpeval_training(batches: list[dict], initial: dict, folder: Path, work: Path, **params) -> tuple[dict, list]:
    """speechbrain-train (recipe vpc2024, the tiny folder's network) on the corpus `folder`, its epoch loader
    giving `batches` (crops read as recorded) and its network and classifier starting from `initial`.
    Returns the trained embedding_model.ckpt and the loss of every step."""
    import torch

    import vpeval_asv.training as training
    from vpeval.build import validate_params
    from vpeval.data.kaldi import read_data_dir
    from vpeval.plugins import get_plugin_manager, plugin_context
    from vpeval.types import TrainingData, TrainingStage
    from vpeval_asv.attacker import AsvAttacker
    from vpeval_speechbrain.tiny import write_ecapa_folder

    by_epoch: dict[int, list] = {}
    for batch in batches:
        waves = torch.stack(
            [read_crop(folder / "wav" / name, start, frames)[0][0] for name, start, frames in batch["crops"]]
        )
        by_epoch.setdefault(batch["epoch"], []).append((waves, torch.tensor(batch["labels"])))
    losses: list[float] = []
    fresh, loader, classifier_class = AsvAttacker._fresh_embedder, training.epoch_loader, training.SpeakerClassifier

    def starting_embedder(self):  # the architecture's network, holding the toolkit's initial weights
        embedder = fresh(self)
        embedder.model.load_state_dict(initial["embedding_model"])
        return embedder

    def epoch_loader(segments, params, sample_rate, seed_epoch, *args):
        return by_epoch[seed_epoch[1]]

    class StartingClassifier(classifier_class):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.head.load_state_dict(initial["classifier"])

        def forward(self, embeddings, labels):
            loss = super().forward(embeddings, labels)
            losses.append(float(loss.detach()))
            return loss

    AsvAttacker._fresh_embedder, training.epoch_loader, training.SpeakerClassifier = (
        starting_embedder,
        epoch_loader,
        StartingClassifier,
    )
    try:
        source = write_ecapa_folder(work / "exp" / "asv_orig", channels=CHANNELS)
        cls = get_plugin_manager().get("attacker", "speechbrain-train")
        raw = {
            "source": str(source),
            "recipe": "vpc2024",
            "epochs": EPOCHS,
            "train_batch_size": BATCH,
            "crop_seconds": CROP,
            "cyclic_step_size": STEP_SIZE,
            **params,
        }
        attacker = cls(validate_params(cls, raw), plugin_context(seed=0, work_dir=work / "run"))
        attacker.train(TrainingData([TrainingStage("anonymized", read_data_dir(folder))], None, "anonymized"))
        trained = torch.load(attacker._trained / "embedding_model.ckpt", weights_only=True)
    finally:
        AsvAttacker._fresh_embedder, training.epoch_loader = fresh, loader
        training.SpeakerClassifier = classifier_class
    return trained, losses


def weight_keys(state: dict) -> list[str]:
    """The trained tensors (batch norm's counters and running statistics left out: not weights)."""
    return [k for k in state if "num_batches_tracked" not in k and "running_" not in k]


def motion(initial: dict, final: dict) -> dict[str, list[float]]:
    """Per tensor: L2 norm and sum of final - initial (what training changed)."""
    out = {}
    for k in weight_keys(final):
        delta = (final[k].double() - initial[k].double()).reshape(-1)
        out[k] = [float(delta.norm()), float(delta.sum())]
    return out


def vpeval_chunks(folder: Path, names: set[str]) -> dict[str, int]:
    """The recipe's segments per file (speechbrain-train's drop_short), for the files `names`."""
    from vpeval.data.kaldi import read_data_dir
    from vpeval_asv.training import crop_segments

    utterances = [u for u in read_data_dir(folder).utterances if Path(u.path).name in names]
    counts: dict[str, int] = {}
    for segment in crop_segments(utterances, {u.speaker: 0 for u in utterances}, CROP, drop_short=True):
        counts[Path(segment.path).name] = counts.get(Path(segment.path).name, 0) + 1
    return counts


def assert_same_training(theirs: dict, folder: Path, work: Path) -> None:
    initial = toolkit_initial_weights()
    trained, losses = vpeval_training(theirs["batches"], initial, folder, work / "aligned")
    np.testing.assert_allclose(losses, theirs["losses"], rtol=0, atol=LOSS_TOLERANCE)
    mine = motion(initial["embedding_model"], trained)
    assert set(mine) == set(theirs["motion"])
    for k, (norm, total) in theirs["motion"].items():
        assert mine[k][0] == pytest.approx(norm, rel=MOTION_TOLERANCE, abs=1e-7), k
        assert mine[k][1] == pytest.approx(total, rel=MOTION_TOLERANCE, abs=1e-6 + 1e-4 * norm), k
    # the comparison can fail: without the Brain's gradient clipping the same batches train other weights
    _, unclipped = vpeval_training(theirs["batches"], initial, folder, work / "unclipped", max_grad_norm=None)
    assert np.abs(np.array(unclipped) - np.array(theirs["losses"])).max() > 100 * LOSS_TOLERANCE
    # the segments per file: prepare_csv's whole-crop chunks (none of this speech is below its energy floor)
    for split in ("train", "dev"):
        assert vpeval_chunks(folder, set(theirs["chunks"][split])) == theirs["chunks"][split]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_train_folder(tmp_path_factory.mktemp("vpc-toolkit-training"))


def test_replayed_toolkit_batches_train_the_same_weights(folder, tmp_path):
    recorded = json.loads(FIXTURE.read_text())
    assert len(recorded["batches"]) == len(recorded["losses"]) > EPOCHS  # several steps in each epoch
    assert max(recorded["lrs"]) == pytest.approx(LR)  # the cyclic rate reached its top within the run
    assert_same_training(recorded, folder, tmp_path)


@pytest.mark.skipif(
    not os.environ.get("VPC_TOOLKIT_2024"),
    reason="VPC_TOOLKIT_2024 is not set: give a checkout of Voice-Privacy-Challenge-2024 at 400de3a (and make "
    "pandas importable) to run its train_asv_speaker_embeddings here; the recorded run is checked regardless",
)
def test_the_toolkit_run_here(folder, tmp_path):
    import torch

    theirs = toolkit_training(Path(os.environ["VPC_TOOLKIT_2024"]), folder, tmp_path / "toolkit")
    rebuilt = toolkit_initial_weights()
    for part in ("embedding_model", "classifier"):
        for k, v in theirs["initial"][part].items():
            assert torch.equal(v, rebuilt[part][k]), (part, k)
    trained, losses = vpeval_training(theirs["batches"], rebuilt, folder, tmp_path / "vpeval")
    np.testing.assert_allclose(losses, theirs["losses"], rtol=0, atol=LOSS_TOLERANCE)
    final = theirs["final"]["embedding_model"]
    for k in weight_keys(final):
        torch.testing.assert_close(trained[k], final[k], rtol=1e-5, atol=1e-6, msg=k)
    theirs["motion"] = motion(theirs["initial"]["embedding_model"], final)
    assert_same_training(theirs, folder, tmp_path / "again")
