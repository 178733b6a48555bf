"""Measure mcadams and poolvc on the real VCTK speakers: GE2E EER (O-O, O-A, A-A) and Whisper WER.

VCTK here has no transcripts, so WER is the anonymized speech's Whisper transcript scored against
the original speech's Whisper transcript (how much of what Whisper heard survives anonymization).
Uses the packaged ge2e encoder and whisper ASR plugins; the poolvc pool is the built-in synth corpus
(20 speakers, a seed of their own: poolvc's default pool).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/anonymizers_real_speech.py [--utterances 10]
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from pathlib import Path

import numpy as np

from vpeval.api import Voice
from vpeval.audio import read_audio
from vpeval.plugins import plugin_context
from vpeval.stats import equal_error_rate
from vpeval.testing.realdata import real_data_root

VCTK = real_data_root() / "vctk_autovc"


def pair_eer(a, b, speakers):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    s = a @ b.T
    same = speakers[:, None] == speakers[None, :]
    off = ~np.eye(len(speakers), dtype=bool)
    return equal_error_rate(s[same & off], s[~same])


def wer(ref: str, hyp: str) -> tuple[int, int]:
    import jiwer

    ref = jiwer.RemovePunctuation()(ref.lower()).split()
    hyp = jiwer.RemovePunctuation()(hyp.lower()).split()
    if not ref:
        return 0, 0
    out = jiwer.process_words(" ".join(ref), " ".join(hyp) or "<empty>")
    return out.substitutions + out.deletions + out.insertions, len(ref)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--utterances", type=int, default=10)
    parser.add_argument("--pool-speakers", type=int, default=20, help="synth pool speakers (own seed)")
    args = parser.parse_args()
    rows = list(csv.DictReader(open(VCTK / "metadata.csv")))
    by_spk: dict[str, list] = {}
    for r in rows:
        by_spk.setdefault(r["speaker"], []).append(r)
    rows = [r for spk in sorted(by_spk) for r in by_spk[spk][: args.utterances]]
    speakers = np.array([r["speaker"] for r in rows])
    audios = [read_audio(VCTK / r["path"], sample_rate=16000)[0] for r in rows]
    work = Path(tempfile.mkdtemp(prefix="vpeval-measure-"))
    context = plugin_context(seed=0, work_dir=work)
    encoder = context.get("encoder", "ge2e")
    asr = context.get("asr", "whisper")
    from vpeval_mcadams.anonymizer import McAdams
    from vpeval_poolvc.anonymizer import PoolVC

    pool = {"use": "synth", "params": {"preset": "tiny", "speakers": args.pool_speakers, "seed": 9_000_001}}
    systems = {
        # The settings these rows were first measured with: output at the input's peak.
        "mcadams alpha 0.8": McAdams(McAdams.Params(alpha=0.8, output_level="input-peak"), context.child("mc")),
        "mcadams alpha [0.5, 0.9]": McAdams(
            McAdams.Params(alpha_range=(0.5, 0.9), output_level="input-peak"), context.child("mc2")
        ),
        "poolvc random": PoolVC(PoolVC.Params(pool=pool, selection="random"), context.child("pvc")),
        "poolvc farthest-random (ge2e)": PoolVC(
            PoolVC.Params(pool=pool, encoder={"use": "ge2e"}), context.child("pvc2")
        ),
        "poolvc selection -> nearest (ge2e)": PoolVC(
            PoolVC.Params(pool=pool, encoder={"use": "ge2e"}, selection="selection"), context.child("pvc3")
        ),
    }
    original = np.stack([encoder.embed(a) for a in audios])
    ref_text = [asr.transcribe(a).text for a in audios]
    print(f"{len(rows)} VCTK utterances, {len(by_spk)} speakers; GE2E cosine EER over all pairs, utterance level")
    print(f"{'system':32s} {'EER O-O':>8s} {'EER O-A':>8s} {'EER A-A':>8s} {'WER vs orig':>12s}")
    print(f"{'original':32s} {100 * pair_eer(original, original, speakers):8.1f}")
    for name, anon in systems.items():
        anon.prepare()
        outs = [
            anon.anonymize(a, 16000, Voice(r["path"], "utterance", context.rng("voice", r["path"])))
            for a, r in zip(audios, rows)
        ]
        emb = np.stack([encoder.embed(o) for o in outs])
        errors = [wer(ref, asr.transcribe(o).text) for ref, o in zip(ref_text, outs)]
        w = sum(e for e, _ in errors) / max(1, sum(n for _, n in errors))
        print(
            f"{name:32s} {'':8s} {100 * pair_eer(original, emb, speakers):8.1f} "
            f"{100 * pair_eer(emb, emb, speakers):8.1f} {100 * w:12.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
