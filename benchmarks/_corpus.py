"""A cheap speech-like corpus for scale measurements: real 16 kHz wav files and a CSV manifest.

Each utterance is 2-6 s of syllables: a glottal pulse train (speaker F0 with a falling intonation and
jitter) through three formant resonators of one of eight vowels (scaled by the speaker's vocal-tract
factor), now and then a burst of band-passed noise (a fricative), with 50-300 ms pauses between words.
About 200x faster than real time on one core, against espeak's few x for the synth plugin: the scale
benchmark needs tens of hours of audio. Deterministic from (seed, speaker, utterance).

Corpora nest: the first S speakers of a bigger corpus are the smaller one (same files), so 1x, 4x and
16x are one generation of the 16x corpus and three manifests.

    python benchmarks/_corpus.py OUT_FOLDER --speakers 1600 --utterances 25 [--workers 2]
"""

from __future__ import annotations

import argparse
import csv
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import butter, sosfilt

SAMPLE_RATE = 16000
# (F1, F2, F3) Hz of eight vowels (Peterson & Barney adult male averages).
VOWELS = np.array(
    [
        [730, 1090, 2440],
        [270, 2290, 3010],
        [530, 1840, 2480],
        [660, 1720, 2410],
        [570, 840, 2410],
        [300, 870, 2240],
        [440, 1020, 2240],
        [490, 1350, 1690],
    ],
    dtype=np.float64,
)
BANDWIDTHS = np.array([80.0, 110.0, 160.0])
MANIFEST_FIELDS = ("id", "path", "speaker", "gender", "duration_s", "sample_rate")


def speaker_voice(seed: int, speaker: int) -> dict:
    """F0, vocal-tract scale and spectral tilt of one speaker (even index female, odd male)."""
    rng = np.random.default_rng([seed, speaker, 1])
    female = speaker % 2 == 0
    return {
        "gender": "f" if female else "m",
        "f0": float(rng.uniform(170, 250) if female else rng.uniform(85, 145)),
        "scale": float(rng.uniform(1.1, 1.25) if female else rng.uniform(0.9, 1.05)),
        "tilt": float(rng.uniform(0.9, 0.97)),
        "fricative": float(rng.uniform(3000, 6000)),
    }


def _resonators(formants: np.ndarray) -> np.ndarray:
    """Second-order sections of three cascaded two-pole resonators (unit gain at DC)."""
    sos = np.zeros((len(formants), 6))
    for k, (f, bw) in enumerate(zip(formants, BANDWIDTHS)):
        r = np.exp(-np.pi * bw / SAMPLE_RATE)
        a1, a2 = -2 * r * np.cos(2 * np.pi * f / SAMPLE_RATE), r * r
        sos[k] = [1 + a1 + a2, 0, 0, 1, a1, a2]
    return sos


def synthesize(voice: dict, rng: np.random.Generator) -> np.ndarray:
    """One utterance of 2-6 s, float32 in [-0.5, 0.5]."""
    total = int(rng.uniform(2.0, 6.0) * SAMPLE_RATE)
    out = np.zeros(total)
    pos = int(rng.uniform(0.05, 0.2) * SAMPLE_RATE)
    while pos < total - SAMPLE_RATE // 10:
        for _ in range(int(rng.integers(1, 4))):  # syllables of one word
            length = min(int(rng.uniform(0.12, 0.3) * SAMPLE_RATE), total - pos)
            if length <= 0:
                break
            if rng.random() < 0.3:  # a fricative onset
                burst = min(int(0.06 * SAMPLE_RATE), length // 2)
                band = voice["fricative"] * rng.uniform(0.8, 1.2)
                sos = butter(
                    2, [band * 0.7, min(band * 1.3, SAMPLE_RATE / 2 - 100)], "bandpass", fs=SAMPLE_RATE, output="sos"
                )
                out[pos : pos + burst] += 0.3 * sosfilt(sos, rng.normal(0, 1, burst))
            progress = pos / total  # declination: pitch falls over the utterance
            drift = np.exp(np.clip(np.cumsum(rng.normal(0, 0.002, length)), -0.15, 0.15))  # slow pitch wander
            f0 = voice["f0"] * (1.1 - 0.2 * progress) * drift
            phase = np.cumsum(f0 / SAMPLE_RATE)
            pulses = np.diff(np.floor(phase), prepend=np.floor(phase[0])).astype(np.float64)
            source = sosfilt([[1, 0, 0, 1, -voice["tilt"], 0]], pulses)  # spectral tilt of the glottal source
            formants = VOWELS[rng.integers(len(VOWELS))] * voice["scale"] * rng.uniform(0.95, 1.05, 3)
            vowel = sosfilt(_resonators(np.minimum(formants, SAMPLE_RATE / 2 - 200)), source)
            ramp = np.minimum(
                1.0, np.minimum(np.arange(length), length - 1 - np.arange(length)) / (0.015 * SAMPLE_RATE)
            )
            out[pos : pos + length] += vowel * ramp / max(1e-9, np.abs(vowel).max())
            pos += length
        pos += int(rng.uniform(0.05, 0.3) * SAMPLE_RATE)  # pause between words
    out += rng.normal(0, 0.002, total)
    return (0.5 * out / max(1e-9, np.abs(out).max())).astype(np.float32)


def _speaker_rows(args: tuple[str, int, int, int]) -> list[dict]:
    folder, seed, speaker, utterances = args
    voice = speaker_voice(seed, speaker)
    spk = f"s{speaker:05d}"
    os.makedirs(Path(folder) / spk, exist_ok=True)
    rows = []
    for u in range(utterances):
        uid = f"{spk}-{u:03d}"
        path = Path(folder) / spk / f"{uid}.wav"
        if path.is_file():
            frames = sf.info(path).frames
        else:
            audio = synthesize(voice, np.random.default_rng([seed, speaker, u]))
            tmp = path.with_suffix(".tmp.wav")
            sf.write(tmp, audio, SAMPLE_RATE, subtype="PCM_16")
            os.replace(tmp, path)
            frames = audio.size
        rows.append(
            {
                "id": uid,
                "path": f"{spk}/{uid}.wav",
                "speaker": spk,
                "gender": voice["gender"],
                "duration_s": f"{frames / SAMPLE_RATE:.4f}",
                "sample_rate": SAMPLE_RATE,
            }
        )
    return rows


def generate(folder: str | os.PathLike, speakers: int, utterances: int, seed: int = 0, workers: int = 1) -> list[dict]:
    """Write (or reuse) the wavs of `speakers` x `utterances` under `folder`; return the manifest rows."""
    jobs = [(str(folder), seed, s, utterances) for s in range(speakers)]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            per_speaker = list(pool.map(_speaker_rows, jobs, chunksize=4))
    else:
        per_speaker = [_speaker_rows(job) for job in jobs]
    return [row for rows in per_speaker for row in rows]


def write_manifest(path: str | os.PathLike, rows: list[dict]) -> Path:
    """A CSV manifest (paths relative to the manifest's folder)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=MANIFEST_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)  # another benchmark reading the manifest never sees it half written
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--speakers", type=int, default=100)
    parser.add_argument("--utterances", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    rows = generate(args.folder, args.speakers, args.utterances, args.seed, args.workers)
    print(write_manifest(args.folder / "manifest.csv", rows), len(rows), "utterances")


if __name__ == "__main__":
    main()
