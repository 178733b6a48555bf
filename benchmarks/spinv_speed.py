"""SpInv speed on one CPU core: seconds per Stage A training epoch and attack milliseconds per utterance.

Corpus: vpeval.testing dummies (--speakers x --utterances, 4 s each); frontends fbank-rvq (8 x 256,
25 Hz) and kimi-like (Whisper tiny.en, 12.5 Hz, 1 x 512 tokens + 384-d features; --frontends);
target encoder GE2E (packaged). Sizes: the paper's (d_h 384, 6 layers, K 1024) and the CPU size of
experiments/spinv.yaml (d_h 128, 2 layers). Views cut from the waveform (the paper) and from the
frontend output of each utterance encoded once (`views_from: frames`). Each epoch time is the median
over --epochs Stage A epochs (target embeddings are computed before the first and not counted; with
`frames` the first epoch also encodes every training utterance, so the median is the steady state).
Attack time per 4 s utterance, median over the held-out utterances: the frontend's encoding of the
utterance, and slice + G (the attack proper).

    OMP_NUM_THREADS=1 python benchmarks/spinv_speed.py [--speakers 12] [--utterances 8] [--epochs 3]
        [--frontends fbank-rvq,kimi-like] [--sizes paper,cpu] [--json out.json]
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
    from vpeval_spinv.views import collate, slice_output

    # fresh copies of the fitted frontend for training and for the attack: kimi-like keeps encoder outputs in
    # memory, and the views of every measurement are the same crops (same seed), so a shared copy hides encoding
    frontend.save(folder / "frontend")
    trained_with = make_frontend(frontend.name, folder / "train")
    trained_with.load(folder / "frontend")
    params = SpInv.Params(**SIZES[size], views_from=views_from, stage_a_epochs=epochs, stage_b_epochs=0, batch_size=32)
    attacker = SpInv(params, plugin_context(seed=0, work_dir=folder, threads=1))
    attacker.frontend = trained_with
    attacker.train(TrainingData([TrainingStage("original", train)]))
    epoch_seconds = [h["seconds"] for h in attacker.history]
    fresh = make_frontend(frontend.name, folder / "fresh")
    fresh.load(folder / "frontend")
    encode_ms, model_ms = [], []
    for u in test.utterances:
        audio = u.load(frontend.sample_rate)
        started = time.perf_counter()
        output = fresh.encode(audio)
        encoded = time.perf_counter()
        observed = slice_output(output, params.observed_seconds, attacker.context.rng("spinv-slice", u.id))
        with torch.no_grad():
            attacker.model(collate([observed], attacker.model.aub.layout, attacker.model.aub.max_frames))
        encode_ms.append(1000 * (encoded - started))
        model_ms.append(1000 * (time.perf_counter() - encoded))
    return {
        "frontend": frontend.name,
        "size": size,
        "views_from": views_from,
        "utterances": len(train),
        "seconds_per_epoch": statistics.median(epoch_seconds),
        "epoch_runs": epoch_seconds,
        "ms_per_training_utterance": 1000 * statistics.median(epoch_seconds) / len(train),
        "attack_encode_ms": statistics.median(encode_ms),
        "attack_model_ms": statistics.median(model_ms),
        "parameters": sum(p.numel() for p in attacker.model.parameters()),
    }


def make_frontend(name: str, folder: Path):
    context = plugin_context(seed=0, work_dir=folder, threads=1)
    if name == "fbank-rvq":
        from vpeval_cpu_frontends.fbank_rvq import FbankRvqFrontend

        return FbankRvqFrontend(FbankRvqFrontend.Params(), context)
    from vpeval_cpu_frontends.kimi_like import KimiLikeFrontend

    return KimiLikeFrontend(KimiLikeFrontend.Params(model="whisper-tiny.en"), context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speakers", type=int, default=12)
    parser.add_argument("--utterances", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--frontends", default="fbank-rvq,kimi-like")
    parser.add_argument("--sizes", default="paper,cpu")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(1)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = make_corpus(
            Path(tmp) / "c", speakers=args.speakers + 2, utterances=args.utterances, seconds=4.0, seed=1
        )
        train = corpus.with_speakers(corpus.speakers[: args.speakers])
        test = corpus.with_speakers(corpus.speakers[args.speakers :])
        for name in args.frontends.split(","):
            frontend = make_frontend(name, Path(tmp) / f"fe-{name}")
            frontend.fit(train)
            rows += [
                measure(size, views, train, test, frontend, args.epochs, Path(tmp) / f"{name}-{size}-{views}")
                for size in args.sizes.split(",")
                for views in ("waveform", "frames")
            ]
    print(
        "| frontend | size | views | parameters | s / Stage A epoch (utterances) | ms per training utterance "
        "| attack: frontend ms / 4 s utterance | attack: slice + G ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['frontend']} | {r['size']} | {r['views_from']} | {r['parameters'] / 1e6:.2f} M "
            f"| {r['seconds_per_epoch']:.1f} ({r['utterances']}) | {r['ms_per_training_utterance']:.0f} "
            f"| {r['attack_encode_ms']:.0f} | {r['attack_model_ms']:.1f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
