"""Anonymizer throughput in times real time on one CPU core (process CPU time, so other jobs on the machine
barely move it).

McAdams (vectorised over frames) against VoicePrivacy's B2: with --vpc-toolkit, the toolkit's own `anonym_v2`
imported from the checkout (anonymization/modules/mcadams/anonymise_dir_mcadams_rand_seed.py); without one, a
restatement of its steps in this file (the same library calls; the output says which was timed). Also the
frame-by-frame loop of the older B2 script (vpeval_mcadams.reference), on the same audio; poolvc when its
package is installed. Only anonym_v2 itself is timed on either side (not the toolkit's file reading and
int16 writing); importing the toolkit's module needs its `utils` importable (pandas among them: PYTHONPATH
may name a folder that holds it).

    OMP_NUM_THREADS=1 python benchmarks/anonymizer_speed.py [--seconds 10] [--runs 5] [--vpc-toolkit PATH]
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


def toolkit_anonym_v2(toolkit: str):
    """The VoicePrivacy toolkit's own anonym_v2, imported from a checkout (its module imports the toolkit's utils)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(toolkit) / "anonymization" / "modules" / "mcadams" / "anonymise_dir_mcadams_rand_seed.py"
    if not path.is_file():
        raise SystemExit(f"--vpc-toolkit {toolkit}: {path} is missing; give a Voice-Privacy-Challenge-2024 checkout.")
    sys.path.insert(0, str(Path(toolkit)))
    spec = importlib.util.spec_from_file_location("vpc_mcadams", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.anonym_v2


def bench_mcadams(audio: np.ndarray, rate: int, runs: int, toolkit: str | None = None) -> None:
    from vpeval_mcadams.anonymizer import McAdams
    from vpeval_mcadams.reference import mcadams_reference

    seconds = len(audio) / rate
    anon = McAdams()
    voice = Voice(key="bench", level="utterance", rng=np.random.default_rng(0))
    # Interleaved runs (ours, VPC 2024's, ours, ...) so machine load hits both alike.
    ours, theirs = [], []
    fast_fn = lambda: anon.anonymize(audio, rate, voice)  # noqa: E731
    if toolkit:
        anonym_v2 = toolkit_anonym_v2(toolkit)
        # float32 samples, as process_wav hands them over (torchaudio.load)
        vpc_fn = lambda: anonym_v2(freq=rate, samples=audio.astype(np.float32), mcadams=0.8)  # noqa: E731
        print(f"against the VPC toolkit's own anonym_v2 from {toolkit}")
    else:
        vpc_fn = lambda: vpc2024_style(audio, rate, 0.8)  # noqa: E731
        print("against a restatement of VPC 2024's anonym_v2 in this file (no --vpc-toolkit: not the toolkit's code)")
    fast_fn(), vpc_fn()
    for _ in range(runs):
        ours += timed_once(fast_fn)
        theirs += timed_once(vpc_fn)
    fast = report("mcadams (vectorised)", ours, seconds)
    v2 = report("VPC toolkit anonym_v2" if toolkit else "VPC 2024 anonym_v2 steps (restated)", theirs, seconds)
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
    parser.add_argument("--vpc-toolkit", help="a Voice-Privacy-Challenge-2024 checkout: time its own anonym_v2")
    args = parser.parse_args()
    audio = test_audio(args.seconds, args.rate)
    print(f"{args.seconds:.0f} s of audio at {args.rate} Hz, {args.runs} runs, one thread")
    bench_mcadams(audio, args.rate, args.runs, args.vpc_toolkit)
    if not args.skip_poolvc:
        bench_poolvc(audio, args.rate, max(1, args.runs // 2))


if __name__ == "__main__":
    main()
