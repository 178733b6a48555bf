"""A released-layout SpeechBrain ECAPA folder (asv_orig's 512/1536 size, random weights) embedded one file at
a time, as VoicePrivacy's EncoderClassifier does, against the speechbrain plugin's packed batches, one thread.

One at a time: the plugin's padded path with batches of one (EncoderClassifier.encode_batch's numbers,
tests/test_equals_speechbrain.py). Packed: `Embedder.embed` with batch_size 32 (vpeval_torch.packed). Speech-
like waveforms of 3-9 s; the two ways run in turn --runs times (wall seconds: on a shared machine the
ratios of alternating runs are what count). The last line gives the ratios' min/median/max and the
largest cosine distance between an utterance's two vectors.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/speechbrain_packed.py
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
from repeats import spread, timed  # benchmarks/repeats.py (scripts run as python benchmarks/<name>.py)
from speech_like import speech_like_set

from vpeval_speechbrain.build import load_folder
from vpeval_speechbrain.embedding import Embedder
from vpeval_speechbrain.tiny import write_ecapa_folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--utterances", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    seconds, waves = speech_like_set(args.utterances, 3, 9)
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_ecapa_folder(Path(tmp) / "asv_orig", seed=1, channels=(512, 512, 512, 512, 1536))
        alone = Embedder(load_folder(folder), batch_size=1)
        packed = Embedder(load_folder(folder), batch_size=32)
    ratios = []
    for run in range(args.runs):
        one, _, t_one = timed(lambda: np.stack([alone.embed_batch([w])[0] for w in waves]))
        together, _, t_packed = timed(packed.embed, waves)
        ratios.append(t_one / t_packed)
        print(
            f"run {run}: one at a time {t_one:.2f} s ({seconds.sum() / t_one:.1f}x real time), "
            f"packed {t_packed:.2f} s ({seconds.sum() / t_packed:.1f}x), ratio {ratios[-1]:.2f}"
        )
    cosine = 1 - (one * together).sum(1) / np.linalg.norm(one, axis=1) / np.linalg.norm(together, axis=1)
    print(
        f"{seconds.sum():.1f} s of speech, load average {os.getloadavg()[0]:.1f}; packed/one-at-a-time "
        f"speed-up min/median/max {spread(ratios)}, "
        f"max cosine distance {cosine.max():.1e}"
    )


if __name__ == "__main__":
    main()
