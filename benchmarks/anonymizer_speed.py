"""Anonymizer throughput in times real time on one CPU core (process CPU time, so other jobs on the machine
barely move it).

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

from vpeval.api import Voice  # noqa: E402
from vpeval.plugins import plugin_context  # noqa: E402


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
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return times


def report(label: str, times: list[float], seconds: float) -> float:
    med = statistics.median(times)
    print(f"{label:34s} median {med * 1000:8.1f} ms  min {min(times) * 1000:8.1f} ms  {seconds / med:7.1f} x real time")
    return med


def vpc2024_style(
    audio: np.ndarray, rate: int, alpha: float = 0.8, win_ms: float = 20.0, shift_ms: float = 10.0, order: int = 20
) -> np.ndarray:
    """The steps of VoicePrivacy 2024's `anonym_v2` (B2), restated here for timing only: librosa.lpc on all
    frames at once, then per frame scipy.signal.tf2zpk (np.roots), the angle warp, np.poly and two
    scipy lfilter calls; overlap-add. (Its code is GPL-3.0 and not a dependency; same library calls.)"""
    import librosa
    import scipy.signal

    eps = np.finfo(np.float32).eps
    x = np.asarray(audio, dtype=np.float64) + eps
    win, shift = int(np.floor(win_ms * 1e-3 * rate)), int(np.floor(shift_ms * 1e-3 * rate))
    hann = np.hanning(win)
    window = np.sqrt(hann / (hann.sum() / shift))
    frames = librosa.util.frame(x, frame_length=win, hop_length=shift).T * window
    lpc = librosa.lpc(frames + eps, order=order, axis=1)
    out = np.zeros_like(x)
    for m, (a, frame) in enumerate(zip(lpc, frames)):
        poles = scipy.signal.tf2zpk(np.array([1.0]), a)[1]
        angle = np.angle(poles)
        warped = np.where(~np.isreal(poles), np.sign(angle) * np.abs(angle) ** alpha, angle)
        a_new = np.real(np.poly(np.abs(poles) * np.exp(1j * warped)))
        residual = scipy.signal.lfilter(a, np.array(1.0), frame)
        out[m * shift : m * shift + win] += scipy.signal.lfilter(np.array([1.0]), a_new, residual) * window
    return out


def bench_mcadams(audio: np.ndarray, rate: int, runs: int) -> None:
    from vpeval_mcadams.anonymizer import McAdams
    from vpeval_mcadams.reference import mcadams_reference

    seconds = len(audio) / rate
    anon = McAdams()
    voice = Voice(key="bench", level="utterance", rng=np.random.default_rng(0))
    # Interleaved runs (ours, VPC 2024's steps, ours, ...) so machine load hits both alike.
    ours, theirs = [], []
    fast_fn = lambda: anon.anonymize(audio, rate, voice)  # noqa: E731
    vpc_fn = lambda: vpc2024_style(audio, rate, 0.8)  # noqa: E731
    fast_fn(), vpc_fn()
    for _ in range(runs):
        ours += timed_once(fast_fn)
        theirs += timed_once(vpc_fn)
    fast = report("mcadams (vectorised)", ours, seconds)
    v2 = report("VPC 2024 anonym_v2 steps", theirs, seconds)
    slow = report("mcadams (per-frame reference)", timed(lambda: mcadams_reference(audio, rate, 0.8), runs), seconds)
    print(
        f"{'mcadams speed-up over anonym_v2':34s} {v2 / fast:.1f} x (per run: "
        f"{', '.join(f'{t / o:.1f}' for o, t in zip(ours, theirs))})"
    )
    print(f"{'mcadams speed-up over reference':34s} {slow / fast:.1f} x")


def timed_once(fn) -> list[float]:
    start = time.process_time()
    fn()
    return [time.process_time() - start]


def bench_poolvc(audio: np.ndarray, rate: int, runs: int) -> None:
    try:
        from vpeval_poolvc.bench import make_benchmark_anonymizer
    except ImportError:
        print("poolvc not installed; skipped")
        return
    with tempfile.TemporaryDirectory() as folder:
        anon = make_benchmark_anonymizer(plugin_context(seed=0, work_dir=folder))
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
