"""Anonymizer throughput in times real time on one CPU core.

McAdams (vectorised over frames) against the straightforward frame-by-frame loop of the VoicePrivacy
B2 script (vpeval_mcadams.reference), on the same audio; poolvc when its package is installed.

    OMP_NUM_THREADS=1 python benchmarks/anonymizer_speed.py [--seconds 10] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vpeval.api import PluginContext, Voice  # noqa: E402


def test_audio(seconds: float, rate: int) -> np.ndarray:
    """Dummy harmonic speech of the requested length (deterministic)."""
    import soundfile as sf

    from vpeval.testing.dummies import make_corpus

    with tempfile.TemporaryDirectory() as folder:
        corpus = make_corpus(folder, speakers=1, utterances=1, sample_rate=rate, seconds=1.0)
        audio, _ = sf.read(corpus.utterances[0].path, dtype="float32")
    reps = int(np.ceil(seconds * rate / len(audio)))
    return np.tile(audio, reps)[: int(seconds * rate)]


def timed(fn, runs: int) -> list[float]:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def report(label: str, times: list[float], seconds: float) -> float:
    med = statistics.median(times)
    print(f"{label:34s} median {med * 1000:8.1f} ms  min {min(times) * 1000:8.1f} ms  "
          f"{seconds / med:7.1f} x real time")
    return med


def bench_mcadams(audio: np.ndarray, rate: int, runs: int) -> None:
    from vpeval_mcadams.anonymizer import McAdams
    from vpeval_mcadams.reference import mcadams_reference

    seconds = len(audio) / rate
    anon = McAdams()
    voice = Voice(key="bench", level="utterance", rng=np.random.default_rng(0))
    fast = report("mcadams (vectorised)", timed(lambda: anon.anonymize(audio, rate, voice), runs), seconds)
    slow = report("mcadams (per-frame reference)", timed(lambda: mcadams_reference(audio, rate, 0.8), runs),
                  seconds)
    print(f"{'mcadams speed-up over reference':34s} {slow / fast:.1f} x")


def bench_poolvc(audio: np.ndarray, rate: int, runs: int) -> None:
    try:
        from vpeval_poolvc.bench import make_benchmark_anonymizer
    except ImportError:
        print("poolvc not installed; skipped")
        return
    with tempfile.TemporaryDirectory() as folder:
        anon = make_benchmark_anonymizer(PluginContext(seed=0, work_dir=__import__("pathlib").Path(folder)))
        voice = Voice(key="bench", level="utterance", rng=np.random.default_rng(0))
        report("poolvc (WORLD + kNN)", timed(lambda: anon.anonymize(audio, rate, voice), runs), len(audio) / rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=16000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-poolvc", action="store_true")
    args = parser.parse_args()
    audio = test_audio(args.seconds, args.rate)
    print(f"{args.seconds:.0f} s of audio at {args.rate} Hz, {args.runs} runs, one thread")
    bench_mcadams(audio, args.rate, args.runs)
    if not args.skip_poolvc:
        bench_poolvc(audio, args.rate, max(1, args.runs // 2))


if __name__ == "__main__":
    main()
