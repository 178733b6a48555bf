"""Attacker speed on one CPU core: training seconds per epoch and embedding extraction (x real time).

Training: ecapa (tiny and VoicePrivacy default size) and xvector (default size) on a few minutes of
dummy-corpus audio, 3 s crops. Extraction: ge2e (pretrained), ecapa and xvector (default sizes,
random weights: speed does not depend on the weights) on the same utterances. Each number is the
median of --repeats runs; the spread (min-max) is printed next to it.

    OMP_NUM_THREADS=1 python benchmarks/attacker_speed.py [--minutes 4] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from repeats import summary  # benchmarks/repeats.py (scripts run as python benchmarks/<name>.py)

from vpeval.api import PluginContext
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage

TINY = {"channels": [32, 32, 32, 32, 96], "embedding_dim": 32}


def training_seconds_per_epoch(cls, params: dict, corpus, repeats: int) -> list[float]:
    """Seconds of one epoch (no validation), once per repeat with a fresh model."""
    times = []
    for r in range(repeats):
        p = cls.Params(**params, epochs=1, batch_size=32, lr_schedule="constant", validation_share=0.0, patience=None)
        attacker = cls(p, PluginContext(seed=r, threads=1))
        attacker.train(TrainingData([TrainingStage("original", corpus)]))
        times.append(attacker.training_result.history[0].seconds)
    return times


def realtime_factors(embed, audios: list[np.ndarray], repeats: int) -> list[float]:
    """Seconds of audio embedded per second of compute, once per repeat."""
    seconds = sum(a.size for a in audios) / 16000
    embed(audios[0])  # warm-up: lazy model loading is not extraction speed
    factors = []
    for _ in range(repeats):
        started = time.perf_counter()
        for audio in audios:
            embed(audio)
        factors.append(seconds / (time.perf_counter() - started))
    return factors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=4.0, help="minutes of dummy training audio")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-default-training", action="store_true", help="skip the slow full-size training epochs")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)

    from vpeval_asv.attacker import EcapaAttacker, XvectorAttacker
    from vpeval_asv.embedding import Embedder
    from vpeval_ge2e.encoder import Ge2eEncoder

    speakers, seconds = 20, 3.0
    utterances = max(1, round(args.minutes * 60 / (speakers * seconds)))
    corpus = make_corpus(Path(tempfile.mkdtemp()), speakers=speakers, utterances=utterances, seconds=seconds, seed=0)
    audio_minutes = sum(u.duration for u in corpus.utterances) / 60
    results: dict = {"audio_minutes": audio_minutes, "utterances": len(corpus), "training": {}, "extraction": {}}

    runs = [("ecapa tiny", EcapaAttacker, TINY), ("xvector default", XvectorAttacker, {})]
    if not args.skip_default_training:
        runs.append(("ecapa default", EcapaAttacker, {}))
    for label, cls, params in runs:
        repeats = args.repeats if "tiny" in label else max(1, args.repeats - 1)
        results["training"][label] = summary(training_seconds_per_epoch(cls, params, corpus, repeats))

    audios = [u.load(16000) for u in corpus.utterances[:20]]
    ge2e = Ge2eEncoder(Ge2eEncoder.Params(), PluginContext(threads=1))
    ge2e_novad = Ge2eEncoder(Ge2eEncoder.Params(vad=False), PluginContext(threads=1))
    ecapa = Embedder(EcapaAttacker(EcapaAttacker.Params()).model_config)
    xvector = Embedder(XvectorAttacker(XvectorAttacker.Params()).model_config)
    for label, embed in [
        ("ge2e (vad)", ge2e.embed),
        ("ge2e (no vad)", ge2e_novad.embed),
        ("ecapa default", ecapa.embed_audio),
        ("xvector default", xvector.embed_audio),
    ]:
        results["extraction"][label] = summary(realtime_factors(embed, audios, args.repeats))

    print(f"training audio: {audio_minutes:.1f} min in {len(corpus)} utterances, 3 s crops, batch 32, 1 thread")
    for label, s in results["training"].items():
        print(f"  train {label:18s} {s['median']:7.1f} s/epoch  (min {s['min']:.1f}, max {s['max']:.1f})")
    tiny = results["training"]["ecapa tiny"]["median"]
    if "ecapa default" in results["training"]:
        print(f"  ecapa default / tiny epoch time: {results['training']['ecapa default']['median'] / tiny:.1f}x")
    print("embedding extraction, x real time (higher is faster):")
    for label, s in results["extraction"].items():
        print(f"  {label:18s} {s['median']:7.1f}x  (min {s['min']:.1f}, max {s['max']:.1f})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
