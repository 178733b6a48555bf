r"""How mcadams's alpha setting and output level move the GE2E EER on real speech (VCTK p225-p228).

The 2 x 2 of {alpha 0.8 fixed (VPC 2020/2022 B2), alpha ~ U[0.5, 0.9] per utterance (VPC 2024 B2)} x
{output at the input's peak, output at full scale (VPC 2024)}, utterance level, pretrained GE2E cosine
scoring over all pairs (the same pairs as benchmarks/anonymizers_real_speech.py). --wer adds Whisper
tiny.en's WER against its own transcript of the original speech.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/mcadams_settings_real_speech.py \
        [--utterances 10] [--wer] [--gain-db -20]
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from pathlib import Path

import numpy as np
from anonymizers_real_speech import VCTK, pair_eer, wer

from vpeval.api import Voice
from vpeval.audio import read_audio
from vpeval.plugins import plugin_context

SETTINGS = {
    "alpha 0.8, input peak (VPC 2020/2022)": {"alpha": 0.8, "output_level": "input-peak"},
    "alpha 0.8, full scale": {"alpha": 0.8, "output_level": "full-scale"},
    "alpha U[0.5, 0.9], input peak": {"alpha_range": (0.5, 0.9), "output_level": "input-peak"},
    "alpha U[0.5, 0.9], full scale (VPC 2024, default)": {},
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--utterances", type=int, default=10)
    parser.add_argument("--wer", action="store_true", help="also Whisper tiny.en WER vs the original's transcript")
    parser.add_argument(
        "--gain-db",
        type=float,
        default=0.0,
        help="scale the input speech first (the VCTK files here peak at 0.99; -20 dB is a quiet recording)",
    )
    args = parser.parse_args()
    rows = list(csv.DictReader(open(VCTK / "metadata.csv")))
    by_spk: dict[str, list] = {}
    for r in rows:
        by_spk.setdefault(r["speaker"], []).append(r)
    rows = [r for spk in sorted(by_spk) for r in by_spk[spk][: args.utterances]]
    speakers = np.array([r["speaker"] for r in rows])
    gain = 10 ** (args.gain_db / 20)
    audios = [gain * read_audio(VCTK / r["path"], sample_rate=16000)[0] for r in rows]
    context = plugin_context(seed=0, work_dir=Path(tempfile.mkdtemp(prefix="vpeval-mcadams-")))
    encoder = context.get("encoder", "ge2e")
    asr = context.get("asr", "whisper") if args.wer else None
    from vpeval_mcadams.anonymizer import McAdams

    original = np.stack([encoder.embed(a) for a in audios])
    ref_text = [asr.transcribe(a).text for a in audios] if asr else None
    peaks = np.array([np.abs(a).max() for a in audios])
    print(
        f"{len(rows)} VCTK utterances, {len(by_spk)} speakers, input peaks {peaks.min():.2f}-{peaks.max():.2f} "
        f"(median {np.median(peaks):.2f}, gain {args.gain_db:+.0f} dB); GE2E cosine EER over all pairs, utterance level"
    )
    print(f"| mcadams setting | EER O-O | EER O-A | EER A-A |{' WER |' if asr else ''}")
    print(f"| original | {100 * pair_eer(original, original, speakers):.1f} | | |{' |' if asr else ''}")
    for name, params in SETTINGS.items():
        anon = McAdams(McAdams.Params(**params), context.child("mcadams"))
        outs = [
            anon.anonymize(a, 16000, Voice(r["path"], "utterance", context.rng("voice", r["path"])))
            for a, r in zip(audios, rows)
        ]
        emb = np.stack([encoder.embed(o) for o in outs])
        cells = (
            f"| {name} | | {100 * pair_eer(original, emb, speakers):.1f} | {100 * pair_eer(emb, emb, speakers):.1f} |"
        )
        if asr:
            errors = [wer(ref, asr.transcribe(o).text) for ref, o in zip(ref_text, outs)]
            cells += f" {100 * sum(e for e, _ in errors) / max(1, sum(n for _, n in errors)):.1f} |"
        print(cells, flush=True)


if __name__ == "__main__":
    main()
