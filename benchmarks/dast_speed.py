"""DAST attacker speed on one CPU core: seconds per stage and per epoch, and embedding speed.

On a dummy corpus (--speakers x --utterances of --seconds), with the packaged Whisper-base as the SSL
stream and the network of experiments/dast-table*.yaml (ECAPA channels 64, batch 32, 2 s crops):
- Stage I per fusion (fbank, ssl, mid), the SSL stream with ssl_context crop (recomputed per crop and
  epoch) and utterance (once per utterance, then cropped): the first epoch (which pays the SSL pass in
  utterance context) and the later ones separately;
- Stage II (mid, Muon) on the corpus converted by world-shift and vtln: conversion time and epochs;
- Stage III (mid, AdamW) on 100 % and 10 % of each speaker's utterances;
- embedding extraction of whole utterances (x real time).
A stage's time is the attacker's train() wall time; conversion = that minus its epochs. Every number is
the median of --repeats runs with a fresh model (spread printed beside it).

    OMP_NUM_THREADS=1 python benchmarks/dast_speed.py [--repeats 3] [--epochs 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

import torch
from repeats import summary  # benchmarks/repeats.py (scripts run as python benchmarks/<name>.py)

from vpeval.plugins import plugin_context
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage

NETWORK = {"channels": [64, 64, 64, 64, 192], "attention_channels": 32, "embedding_dim": 64, "crop_seconds": 2.0}
STAGE = {"batch_size": 32, "grad_accumulation": 1}


def run_stage(params: dict, data: TrainingData, seed: int, work: Path) -> dict:
    """Train once; the stage's wall time, its epochs' times and the time outside the epochs."""
    from vpeval_dast.attacker import DastAttacker

    # every repeat pays its own SSL pass: its own work folder holds its own SSL store (a run shares one)
    attacker = DastAttacker(DastAttacker.Params(**params), plugin_context(seed=seed, work_dir=work, threads=1))
    attacker._ssl_stream()  # model loading is not training time
    started = time.perf_counter()
    attacker.train(data)
    total = time.perf_counter() - started
    epochs = [s for r in attacker.stage_records for s in r.seconds]
    return {
        "total": total,
        "first_epoch": epochs[0],
        "later_epochs": statistics.median(epochs[1:]) if len(epochs) > 1 else None,
        "outside_epochs": total - sum(epochs),
        "attacker": attacker,
    }


def fmt(s: dict) -> str:
    return f"{s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speakers", type=int, default=8)
    parser.add_argument("--utterances", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="run only the stages whose name contains this text")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    tmp = Path(tempfile.mkdtemp())
    corpus = make_corpus(
        tmp / "audio", speakers=args.speakers, utterances=args.utterances, seconds=args.seconds, seed=0
    )
    audio_seconds = sum(u.duration for u in corpus.utterances)
    original = TrainingData([TrainingStage("original", corpus)])
    target = TrainingData([TrainingStage("target", corpus, "target")], scenario="anonymized")
    e = args.epochs
    runs = {
        "I fbank": (
            {**NETWORK, "fusion": "fbank", "stages": ["I"], "stage1": {**STAGE, "epochs": e, "dropout": 0.0}},
            original,
        ),
        "I ssl (crop)": (
            {**NETWORK, "fusion": "ssl", "stages": ["I"], "stage1": {**STAGE, "epochs": e, "dropout": 0.0}},
            original,
        ),
        "I ssl (utterance)": (
            {
                **NETWORK,
                "fusion": "ssl",
                "ssl_context": "utterance",
                "stages": ["I"],
                "stage1": {**STAGE, "epochs": e, "dropout": 0.0},
            },
            original,
        ),
        "I mid (crop)": (
            {**NETWORK, "fusion": "mid", "stages": ["I"], "stage1": {**STAGE, "epochs": e, "dropout": 0.0}},
            original,
        ),
        "I mid (utterance)": (
            {
                **NETWORK,
                "fusion": "mid",
                "ssl_context": "utterance",
                "stages": ["I"],
                "stage1": {**STAGE, "epochs": e, "dropout": 0.0},
            },
            original,
        ),
        "II mid (utterance), world-shift + vtln": (
            {
                **NETWORK,
                "fusion": "mid",
                "ssl_context": "utterance",
                "stages": ["II"],
                "stage2_anonymizers": [{"use": "world-shift"}, {"use": "vtln"}],
                "stage2": {**STAGE, "epochs": e},
            },
            original,
        ),
        "III mid (utterance), 100 %": (
            {
                **NETWORK,
                "fusion": "mid",
                "ssl_context": "utterance",
                "stages": ["III"],
                "stage3": {**STAGE, "epochs": e},
            },
            target,
        ),
        "III mid (utterance), 10 %": (
            {
                **NETWORK,
                "fusion": "mid",
                "ssl_context": "utterance",
                "stages": ["III"],
                "stage3_fraction": 0.1,
                "stage3": {**STAGE, "epochs": e},
            },
            target,
        ),
    }
    results: dict = {
        "audio_seconds": audio_seconds,
        "utterances": len(corpus),
        "epochs": e,
        "stages": {},
        "extraction": {},
    }
    print(
        f"{len(corpus)} utterances, {audio_seconds:.0f} s of audio, {e} epochs per stage, {args.repeats} repeats; "
        "seconds, median (min-max)"
    )
    print("| run | whole stage | first epoch | later epochs (median) | outside the epochs |")
    print("|---|---|---|---|---|")
    trained = {}
    for name, (params, data) in runs.items():
        if args.only not in name:
            continue
        measured = [run_stage(params, data, r, tmp / "work" / f"{name}-{r}") for r in range(args.repeats)]
        row = {k: summary([m[k] for m in measured]) for k in ("total", "first_epoch", "later_epochs", "outside_epochs")}
        results["stages"][name] = row
        trained[name] = measured[-1]["attacker"]
        print(
            f"| {name} | {fmt(row['total'])} | {fmt(row['first_epoch'])} | {fmt(row['later_epochs'])} | "
            f"{fmt(row['outside_epochs'])} |",
            flush=True,
        )
    for name in ("I fbank", "I ssl (utterance)", "I mid (utterance)"):
        if name not in trained:
            continue
        attacker = trained[name]
        attacker.embedder.ssl_store = None  # extraction speed includes the SSL model
        factors = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            attacker.embedder.embed_utterances(corpus.utterances)
            factors.append(audio_seconds / (time.perf_counter() - started))
        results["extraction"][name.split()[1]] = summary(factors)
        print(f"embedding, {name.split()[1]}: {fmt(summary(factors))} x real time", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
