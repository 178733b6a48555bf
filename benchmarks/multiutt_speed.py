"""multiutt (seed 000) speed per system on one CPU core: training and scoring CPU time, ratios to `mean`.

Every system of vpeval-multiutt trains from scratch on the same dummy corpus (tones with per-speaker
word habits in the transcripts) at experiments/seed000.yaml's network sizes with few epochs, then
represents held-out trial sides of N utterances. Transcripts are the corpus's (`transcripts: corpus`)
and ssl-whisper's second frame source is filterbanks, so the numbers are the systems' own cost: the
ASR (benchmarks/asr_speed.py) and a Whisper frame frontend (benchmarks/frontend_speed.py) come on top
where a system reads them. Times are process CPU seconds (one torch thread), so load from other
processes inflates them little; each is the median of --repeats fresh trainings, min-max beside it.

    OMP_NUM_THREADS=1 python benchmarks/multiutt_speed.py [--repeats 3] [--systems mean,text] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from repeats import summary  # benchmarks/repeats.py (scripts run as python benchmarks/<name>.py)

from vpeval.api import PluginContext
from vpeval.testing.dummies import make_corpus
from vpeval.types import Corpus, TrainingData, TrainingStage

# experiments/seed000.yaml's sizes, with 2 epochs per stage so that a repeat takes seconds.
SIZES = {
    "channels": [64, 64, 64, 64, 192],
    "attention_channels": 32,
    "crop_seconds": 2.0,
    "speakers_per_batch": 10,
    "lr": 0.002,
    "text_finetune": False,
    "text_batch_speakers": 10,
    "fusion_lr": 0.001,
    "transcripts": "corpus",
    "epochs": 2,
    "text_epochs": 2,
    "fusion_epochs": 2,
    "hybrid_epochs": 2,
    "cross_frames": "fbank",
    "ssl_whisper_dim": 128,
}
VARIANTS = {
    "mean": {"system": "mean"},
    "query-attention": {"system": "query-attention"},
    "frame-concat": {"system": "frame-concat"},
    "text": {"system": "text"},
    "audio+text (concat)": {"system": "audio-text"},
    "audio+text (0.5/0.5)": {"system": "audio-text", "fusion": "weighted"},
    "audio+text (utt)": {"system": "audio-text", "fusion_level": "utterance"},
    "audio+prosody": {"system": "audio-prosody"},
    "audio+prosody (utt)": {"system": "audio-prosody", "fusion_level": "utterance"},
    "hybrid": {"system": "hybrid"},
    "rjca": {"system": "rjca"},
    "rjca-global-text": {"system": "rjca-global-text"},
    "ssl-whisper": {"system": "ssl-whisper"},
}
WORDS = (
    "apple river stone cloud paper garden window yellow orange table seven music doctor silver basket "
    "planet forest candle bridge letter pocket summer winter button"
).split()


def with_habits(corpus: Corpus) -> Corpus:
    """Each speaker favours four words, so text systems have something to learn."""
    out = []
    for index, (_, utts) in enumerate(sorted(corpus.by_speaker().items())):
        rng = np.random.default_rng([3, index])
        liked = rng.choice(len(WORDS), 4, replace=False)
        for u in utts:
            words = [
                WORDS[liked[rng.integers(4)]] if rng.random() < 0.6 else WORDS[rng.integers(len(WORDS))]
                for _ in range(8)
            ]
            out.append(u.replace(transcript=" ".join(words)))
    return Corpus(corpus.name, out, dict(corpus.speaker_gender), fingerprint=corpus.fingerprint + "-habits")


def sides_of(corpus: Corpus, n: int) -> list[list]:
    sides = []
    for _, utts in sorted(corpus.by_speaker().items()):
        sides += [utts[i : i + n] for i in range(0, len(utts) - n + 1, n)]
    return sides


def measure(params: dict, train: Corpus, heldout: Corpus, ns: list[int], repeat: int, work: Path) -> dict:
    from vpeval_multiutt.attacker import MultiUttAttacker

    attacker = MultiUttAttacker(MultiUttAttacker.Params(**params), PluginContext(seed=repeat, threads=1, work_dir=work))
    started = time.process_time()
    attacker.train(TrainingData([TrainingStage("original", train)]))
    out = {"train_cpu_s": time.process_time() - started, "score_cpu_ms_per_side": {}}
    for n in ns:
        sides = sides_of(heldout, n)
        # Every N from cold memories: frames, and the sentence vectors a frozen text encoder memoises.
        if attacker.uses_audio:
            attacker.frames.cache.items.clear()
            attacker.frames.cache.used = 0
        if attacker.text is not None:
            attacker.text.forget()
        started = time.process_time()
        attacker.represent_many(sides)
        out["score_cpu_ms_per_side"][n] = 1000 * (time.process_time() - started) / len(sides)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--systems", default=",".join(VARIANTS), help="comma-separated variant names (default: all)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)

    root = Path(tempfile.mkdtemp())
    corpus = with_habits(make_corpus(root / "audio", speakers=16, utterances=15, seconds=2.5, seed=0))
    train = corpus.with_speakers(corpus.speakers[:10])
    heldout = corpus.with_speakers(corpus.speakers[10:])
    ns = [5, 15]
    results: dict = {"train_utterances": len(train), "heldout_utterances": len(heldout), "sizes": SIZES, "systems": {}}
    for name in args.systems.split(","):
        runs = [
            measure({**SIZES, **VARIANTS[name]}, train, heldout, ns, r, root / f"{name}-{r}")
            for r in range(args.repeats)
        ]
        results["systems"][name] = {
            "train_cpu_s": summary([r["train_cpu_s"] for r in runs]),
            "score_cpu_ms_per_side": {n: summary([r["score_cpu_ms_per_side"][n] for r in runs]) for n in ns},
        }
        row = results["systems"][name]
        print(
            f"{name}: train {row['train_cpu_s']['median']:.1f} CPU s, score ms/side "
            + ", ".join(f"N={n} {row['score_cpu_ms_per_side'][n]['median']:.0f}" for n in ns),
            flush=True,
        )

    base = results["systems"].get("mean")
    print(
        f"\n{len(train)} training utterances (10 speakers x 15, 2.5 s), 2 epochs per stage, seed000 sizes, 1 thread; "
        f"scoring: sides of {len(heldout)} held-out utterances"
    )
    head = f"| system | train CPU s | x mean | score ms/side N={ns[0]} | x mean | score ms/side N={ns[1]} | x mean |"
    print(head)
    print("|---|---|---|---|---|---|---|")
    for name, s in results["systems"].items():
        t = s["train_cpu_s"]
        cells = [
            f"{t['median']:.1f} ({t['min']:.1f}-{t['max']:.1f})",
            f"{t['median'] / base['train_cpu_s']['median']:.2f}" if base else "-",
        ]
        for n in ns:
            v = s["score_cpu_ms_per_side"][n]
            cells += [
                f"{v['median']:.0f} ({v['min']:.0f}-{v['max']:.0f})",
                f"{v['median'] / base['score_cpu_ms_per_side'][n]['median']:.2f}" if base else "-",
            ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
