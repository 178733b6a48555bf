"""Semi-informed training, end to end: the VPC 2024 toolkit's own training against vpeval's speechbrain-train,
each run whole (its own data split, crops, batch order and initial weights), measured by the EER of the
trained network on held-out speakers.

speechocean762's real 16 kHz speech: the first `--train-speakers` speakers (10 utterances each) play
train-clean-360<suffix>, the next `--test-speakers` are enrolled (3 utterances, embeddings averaged, as VPC's
enrollment) and tested on their other utterances (every enrolled speaker against every test utterance).
Every network is scored the same way (Fbank, sentence mean normalisation, the trained ECAPA-TDNN on the whole
utterance, cosine), so only training differs. Toolkit: tests/test_vpc_toolkit_training.py's toolkit_training
(train_asv_speaker_embeddings at 400de3a on the CPU, python random and the YAML seed set per run; the last
epoch's weights, as run_evaluation.py's scan_checkpoint picks). vpeval: speechbrain-train, recipe vpc2024,
as it is now ("aligned") and with the settings it had before this comparison ("before": no gradient clipping,
the best validation epoch kept, utterances shorter than a crop repeated).

    PYTHONPATH=<pandas> .venv/bin/python benchmarks/vpc_training_parity.py <VPC 2024 checkout> [--seeds 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENROLLS = 3


def _tests():
    if str(ROOT / "tests") not in sys.path:  # the test module imports its helpers (tests/conftest.py's path)
        sys.path.insert(0, str(ROOT / "tests"))
    spec = importlib.util.spec_from_file_location("vpc_training", ROOT / "tests" / "test_vpc_toolkit_training.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def embed(state: dict, paths: list[str], channels, dim: int) -> np.ndarray:
    import soundfile
    import torch
    from speechbrain.lobes.features import Fbank
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN

    model = ECAPA_TDNN(
        80, channels=list(channels), kernel_sizes=[5, 3, 3, 3, 1], dilations=[1, 2, 3, 4, 1], lin_neurons=dim
    )
    model.load_state_dict(state)
    model.eval()
    fbank = Fbank(n_mels=80)
    out = []
    with torch.no_grad():
        for path in paths:
            audio, _ = soundfile.read(path, dtype="float32")
            feats = fbank(torch.from_numpy(audio).unsqueeze(0))
            out.append(model(feats - feats.mean(dim=1, keepdim=True)).reshape(-1).numpy())
    vectors = np.stack(out)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def eer_of(state: dict, test: Path, channels, dim: int) -> float:
    from vpeval.stats import eer

    lines = [line.split() for line in (test / "wav.scp").read_text().splitlines()]
    speakers = [u.split("-")[0] for u, _ in lines]
    vectors = embed(state, [p for _, p in lines], channels, dim)
    enrolled, trials = {}, []
    for i, spk in enumerate(speakers):
        if sum(s == spk for s in speakers[:i]) < ENROLLS:
            enrolled.setdefault(spk, []).append(i)
        else:
            trials.append(i)
    models = {s: vectors[idx].mean(axis=0) for s, idx in enrolled.items()}
    scores, targets = [], []
    for spk, model in models.items():
        for t in trials:
            scores.append(float(model @ vectors[t]) / float(np.linalg.norm(model)))
            targets.append(speakers[t] == spk)
    return 100.0 * eer(np.array(scores), np.array(targets))


def vpeval_state(folder: Path, work: Path, seed: int, settings: dict, **params) -> dict:
    import torch

    from vpeval.build import validate_params
    from vpeval.data.kaldi import read_data_dir
    from vpeval.plugins import get_plugin_manager, plugin_context
    from vpeval.types import TrainingData, TrainingStage
    from vpeval_speechbrain.tiny import write_ecapa_folder

    source = write_ecapa_folder(work / "exp" / "asv_orig", channels=settings["channels"])
    cls = get_plugin_manager().get("attacker", "speechbrain-train")
    raw = {
        "source": str(source),
        "recipe": "vpc2024",
        "epochs": settings["epochs"],
        "train_batch_size": settings["batch"],
        "crop_seconds": settings["crop"],
        "cyclic_step_size": settings["step_size"],
        **params,
    }
    attacker = cls(validate_params(cls, raw), plugin_context(seed=seed, work_dir=work / "run"))
    attacker.train(TrainingData([TrainingStage("anonymized", read_data_dir(folder))], None, "anonymized"))
    return torch.load(attacker._trained / "embedding_model.ckpt", weights_only=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("toolkit", type=Path, help="a checkout of Voice-Privacy-Challenge-2024 (400de3a)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--train-speakers", type=int, default=36)
    parser.add_argument("--test-speakers", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--crop", type=float, default=2.0)
    parser.add_argument("--out", type=Path, help="write the numbers as JSON here")
    args = parser.parse_args()
    tests = _tests()
    work = Path(tempfile.mkdtemp(prefix="vpc-training-parity-"))
    train = tests.build_train_folder(work / "tree", slice(0, args.train_speakers), 10)
    test = tests.build_train_folder(
        work / "tree", slice(args.train_speakers, args.train_speakers + args.test_speakers), 10, name="test"
    )
    import soundfile

    # the cyclic rate's half cycle: half the run's steps (the recipe's 65000 suits train-clean-360 only)
    paths = [line.split()[1] for line in (train / "wav.scp").read_text().splitlines()]
    segments = sum(int(soundfile.info(p).duration / args.crop) for p in paths)
    step_size = max(1, args.epochs * -(-int(0.9 * segments) // args.batch) // 2)
    settings = {
        "speakers": args.train_speakers,
        "epochs": args.epochs,
        "batch": args.batch,
        "crop": args.crop,
        "channels": (32, 32, 32, 32, 96),
        "dim": 16,  # vpeval_speechbrain.tiny writes lin_neurons 16
        "step_size": step_size,
    }
    results: dict[str, list[float]] = {"toolkit": [], "vpeval aligned": [], "vpeval before": []}
    seconds: dict[str, float] = {k: 0.0 for k in results}
    for seed in range(args.seeds):
        started = time.perf_counter()
        run = tests.toolkit_training(
            args.toolkit.resolve(),
            train,
            work / f"toolkit{seed}",
            **settings,
            seed=1986 + seed,
            python_seed=seed,
        )
        state = run["final"]["embedding_model"]
        results["toolkit"].append(eer_of(state, test, settings["channels"], settings["dim"]))
        seconds["toolkit"] += time.perf_counter() - started
        print(f"seed {seed}: toolkit EER {results['toolkit'][-1]:.2f} ({len(run['losses'])} steps)", flush=True)
        for label, params in (
            ("vpeval aligned", {}),
            ("vpeval before", {"max_grad_norm": None, "keep_epoch": "best", "drop_short": False}),
        ):
            started = time.perf_counter()
            state = vpeval_state(train, work / f"{label.replace(' ', '-')}{seed}", seed, settings, **params)
            results[label].append(eer_of(state, test, settings["channels"], settings["dim"]))
            seconds[label] += time.perf_counter() - started
            print(f"seed {seed}: {label} EER {results[label][-1]:.2f}", flush=True)
    summary = {
        k: {"eers": [round(v, 2) for v in vs], "mean": round(float(np.mean(vs)), 2), "sd": round(float(np.std(vs)), 2)}
        for k, vs in results.items()
    }
    print(json.dumps({"settings": {**settings, "seeds": args.seeds}, "eer": summary, "seconds": seconds}, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"settings": {**settings, "seeds": args.seeds}, "eer": summary}, indent=1))


if __name__ == "__main__":
    main()
