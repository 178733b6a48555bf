"""SpInv speed on one CPU core: seconds per Stage A training epoch and attack milliseconds per utterance.

Corpus: vpeval.testing dummies (--speakers x --utterances, 4 s each); frontend fbank-rvq (8 x 256,
25 Hz); target encoder GE2E (packaged). Sizes: the paper's (d_h 384, 6 layers, K 1024) and the
CPU size of experiments/spinv.yaml (d_h 128, 2 layers). Views cut from the waveform (the paper) and
from the frontend output of each utterance encoded once (`views_from: frames`). Each epoch time is
the median over --epochs epochs (target embeddings are computed before the first and not counted).
Attack time: frontend encode + slice + G per 4 s utterance, median over the held-out utterances.

    OMP_NUM_THREADS=1 python benchmarks/spinv_speed.py [--speakers 12] [--utterances 8] [--epochs 3] [--json out.json]
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

from vpeval.plugins import plugin_context
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage

SIZES = {
    "paper": {"hidden": 384, "layers": 6, "heads": 6, "output_dim": 512},
    "cpu": {"hidden": 128, "layers": 2, "heads": 4, "output_dim": 256, "dino_prototypes": 256, "dino_hidden": 512},
}


def measure(size: str, views_from: str, train, test, frontend, epochs: int, folder: Path) -> dict:
    from vpeval_spinv.attacker import SpInv

    params = SpInv.Params(**SIZES[size], views_from=views_from, stage_a_epochs=epochs, stage_b_epochs=0, batch_size=32)
    attacker = SpInv(params, plugin_context(seed=0, work_dir=folder, threads=1))
    attacker.frontend = frontend
    attacker.train(TrainingData([TrainingStage("original", train)]))
    epoch_seconds = [h["seconds"] for h in attacker.history]
    attack_ms = []
    for u in test.utterances:
        started = time.perf_counter()
        attacker.recover(u)
        attack_ms.append(1000 * (time.perf_counter() - started))
    return {
        "size": size, "views_from": views_from, "utterances": len(train),
        "seconds_per_epoch": statistics.median(epoch_seconds), "epoch_runs": epoch_seconds,
        "attack_ms_per_utterance": statistics.median(attack_ms),
        "parameters": sum(p.numel() for p in attacker.model.parameters()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speakers", type=int, default=12)
    parser.add_argument("--utterances", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(1)
    from vpeval_cpu_frontends.fbank_rvq import FbankRvqFrontend

    with tempfile.TemporaryDirectory() as tmp:
        corpus = make_corpus(Path(tmp) / "c", speakers=args.speakers + 2, utterances=args.utterances, seconds=4.0, seed=1)
        train = corpus.with_speakers(corpus.speakers[: args.speakers])
        test = corpus.with_speakers(corpus.speakers[args.speakers :])
        frontend = FbankRvqFrontend(FbankRvqFrontend.Params(), plugin_context(seed=0, work_dir=Path(tmp) / "fe"))
        frontend.fit(train)
        rows = [measure(size, views, train, test, frontend, args.epochs, Path(tmp) / f"{size}-{views}")
                for size in SIZES for views in ("waveform", "frames")]
    print("| size | views | parameters | s / epoch (utterances) | attack ms / 4 s utterance |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['size']} | {r['views_from']} | {r['parameters'] / 1e6:.2f} M | {r['seconds_per_epoch']:.1f} ({r['utterances']}) "
              f"| {r['attack_ms_per_utterance']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
