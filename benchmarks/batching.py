"""Batched against per-utterance speaker embedding (the asv plugin's Embedder), one CPU thread both ways.

Per-utterance: `Embedder.embed_audio` on each waveform, speechbrain's own forward (the path every
embedding took before batching). Batched: `Embedder.embed_many`, packed length buckets
(vpeval_torch.packed). Speech-like utterances of 2-6 s (benchmarks/_corpus.py), random weights (speed does
not depend on them). The two ways run in turn, --runs times after a warm-up pass; times are CPU seconds
(one thread: the compute, steadier than wall time on a machine other jobs keep busy), x real time is
from their medians, the speed-up is the median of the runs' ratios. The distance is the largest cosine
distance between an utterance's two embeddings. malloc keeps freed memory as in a run (vpeval.memory;
--glibc-defaults measures without).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/batching.py --quick   # ECAPA at the demo's size, < 1 min
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/batching.py           # + VoicePrivacy sizes, x-vector, batch sizes

The last line is `batched/per-utterance speed-up S, max cosine distance D` for the first ECAPA row.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from _corpus import speaker_voice, synthesize  # benchmarks/_corpus.py (scripts run as python benchmarks/<name>.py)

from vpeval.memory import reuse_freed_memory
from vpeval_asv.embedding import Embedder
from vpeval_asv.models import ModelConfig

# (label, architecture, n_mels, channels, embedding size)
SMALL_ECAPA = ("ecapa 128/384 (demo)", "ecapa", 80, (128, 128, 128, 128, 384), 192)
NETWORKS = [
    SMALL_ECAPA,
    ("ecapa 512/1536 (VPC 2024)", "ecapa", 80, (512, 512, 512, 512, 1536), 192),
    ("xvector 512/1500 (VPC)", "xvector", 24, (512, 512, 512, 512, 1500), 512),
]


def utterances(count: int, seed: int = 0) -> list[np.ndarray]:
    """`count` speech-like utterances of 2-6 s from eight speakers."""
    rng = np.random.default_rng(seed)
    return [synthesize(speaker_voice(seed, k % 8), rng).astype(np.float32) for k in range(count)]


def cpu_seconds(run) -> float:
    """CPU seconds of this process for one call (one thread: its compute, whatever else the machine runs)."""
    started = time.process_time()
    run()
    return time.process_time() - started


def measure(network, audios: list[np.ndarray], batch_size: int, batch_frames: int | None, runs: int) -> dict:
    """Both ways in turn, --runs times after a warm-up (alternating evens out a machine whose load drifts)."""
    label, architecture, n_mels, channels, dim = network
    torch.manual_seed(0)
    embedder = Embedder(
        ModelConfig(architecture, n_mels, channels, dim), batch_size=batch_size, batch_frames=batch_frames
    )
    with torch.no_grad():
        single = np.stack([embedder.embed_audio(a) for a in audios])  # also the warm-up
        batched = embedder.embed_many(audios)
        pairs = [
            (
                cpu_seconds(lambda: [embedder.embed_audio(a) for a in audios]),
                cpu_seconds(lambda: embedder.embed_many(audios)),
            )
            for _ in range(runs)
        ]
    per_item = statistics.median(p for p, _ in pairs)
    packed = statistics.median(b for _, b in pairs)
    a, b = single.astype(np.float64), batched.astype(np.float64)
    cosine = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    speech = sum(x.size for x in audios) / 16000
    return {
        "network": label,
        "batch": f"{batch_size}/{embedder.batch_frames}",
        "per_item_rt": speech / per_item,
        "batched_rt": speech / packed,
        "speedup": statistics.median(p / b for p, b in pairs),
        "distance": float(np.max(1 - cosine)),
        "max_abs": float(np.max(np.abs(a - b))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="ECAPA at the demo's size only, 32 utterances")
    parser.add_argument("--utterances", type=int, default=None, help="utterances (default 32 quick, 96 full)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--glibc-defaults", action="store_true", help="leave malloc's thresholds as glibc sets them (runs raise them)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    if not args.glibc_defaults:
        reuse_freed_memory()  # as every run does (PluginContext.apply_threads): both ways measured alike
    audios = utterances(args.utterances or (32 if args.quick else 96))
    speech = sum(a.size for a in audios) / 16000
    if args.quick:
        plan = [(SMALL_ECAPA, 64, None)]
    else:
        plan = [(n, 64, None) for n in NETWORKS] + [(SMALL_ECAPA, size, frames) for size, frames in SWEEP]
    print(f"{len(audios)} utterances, {speech:.0f} s of speech, 1 thread, median CPU time of {args.runs} runs")
    header = f"{'network':28} {'batch/frames':>13} {'per-utt xRT':>12} {'batched xRT':>12} {'speed-up':>9}"
    print(f"{header} {'cos dist':>9}")
    rows = []
    for network, size, frames in plan:
        row = measure(network, audios, size, frames, args.runs)
        rows.append(row)
        print(
            f"{row['network']:28} {row['batch']:>13} {row['per_item_rt']:12.1f} {row['batched_rt']:12.1f} "
            f"{row['speedup']:9.2f} {row['distance']:9.1e}"
        )
    first = rows[0]
    print(f"batched/per-utterance speed-up {first['speedup']:.2f}, max cosine distance {first['distance']:.1e}")


# the small ECAPA at other batch bounds (utterances, frames): how the packed batch size trades off
SWEEP = [(4, 100_000), (16, 100_000), (64, 2000), (64, 4000), (64, 100_000)]


if __name__ == "__main__":
    main()
