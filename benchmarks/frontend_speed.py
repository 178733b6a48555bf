"""Encode speed of speech-token frontends on one CPU core, in times real time (higher is faster).

    OMP_NUM_THREADS=1 python benchmarks/frontend_speed.py [--seconds 4] [--runs 5]

Frontends: kimi-like (packaged Whisper base encoder + k-means tokens; with and without padding to
Whisper's 30 s window), fbank-rvq (log-mel + 8-stage residual VQ) and a tiny random-weight Mimi
(transformers' MimiModel code path) and a full-size Mimi with random weights (MimiConfig's
defaults are kyutai/mimi's architecture, so its speed is the real model's). Codebooks are fitted first on a
small fake corpus; only encode() is timed. Prints the median and spread over runs of each.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np

from vpeval.api import PluginContext
from vpeval.testing.dummies import make_corpus, speaker_voice, synthesize


def frontends(corpus):
    from vpeval_cpu_frontends.fbank_rvq import FbankRvqFrontend
    from vpeval_cpu_frontends.kimi_like import KimiLikeFrontend
    from vpeval_slm_frontends.mimi import MimiFrontend
    from vpeval_slm_frontends.tiny import MIMI

    context = PluginContext(seed=0, threads=1)
    made = {
        "kimi-like (whisper-base)": KimiLikeFrontend(KimiLikeFrontend.Params(codebook_size=64), context),
        "kimi-like (30 s window)": KimiLikeFrontend(
            KimiLikeFrontend.Params(codebook_size=64, pad_to_window=True), context
        ),
        "fbank-rvq (8 x 256)": FbankRvqFrontend(FbankRvqFrontend.Params(), context),
        "mimi (tiny random)": MimiFrontend(MimiFrontend.Params(config=MIMI), context),
        # MimiConfig() defaults are kyutai/mimi's architecture: the real model's cost, random weights.
        "mimi (full size, random)": MimiFrontend(MimiFrontend.Params(config={}), context),
    }
    for frontend in made.values():
        frontend.fit(corpus)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="length of the encoded utterance")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        corpus = make_corpus(folder, speakers=8, utterances=8, seconds=2.0, seed=1)
        made = frontends(corpus)
        print(
            f"{'frontend':28s} {'x real time':>12s} {'min':>8s} {'max':>8s}   "
            f"({args.runs} runs, {args.seconds:g} s audio)"
        )
        for label, frontend in made.items():
            audio = synthesize(speaker_voice(3), args.seconds, frontend.sample_rate, np.random.default_rng(0))
            frontend.encode(audio)  # warm-up: model load, first-call allocations
            speeds = []
            for _ in range(args.runs):
                start = time.perf_counter()
                frontend.encode(audio)
                speeds.append(args.seconds / (time.perf_counter() - start))
            print(f"{label:28s} {statistics.median(speeds):12.1f} {min(speeds):8.1f} {max(speeds):8.1f}")


if __name__ == "__main__":
    main()
