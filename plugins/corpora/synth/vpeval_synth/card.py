"""The corpus card: what a generated corpus holds, next to its audio (card.json and card.md)."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from pathlib import Path


def measured_cues() -> dict | None:
    """The identity-cue table measured on the demo preset by benchmarks/synth_generation.py."""
    source = resources.files("vpeval_synth").joinpath("cues_demo.json")
    return json.loads(source.read_text()) if source.is_file() else None


def make_card(rows: list[dict], settings: dict, engine: str, engine_version: str, generator_version: str) -> dict:
    speakers = list(dict.fromkeys(r["speaker"] for r in rows))
    gender_of = {r["speaker"]: r["gender"] for r in rows}
    return {
        "name": "synth",
        "generator_version": generator_version,
        "speakers": len(speakers),
        "utterances": len(rows),
        "hours": round(sum(float(r["duration"]) for r in rows) / 3600, 3),
        "seconds_min": min(float(r["duration"]) for r in rows),
        "seconds_max": max(float(r["duration"]) for r in rows),
        "genders": dict(sorted(Counter(gender_of.values()).items())),
        "emotions": dict(sorted(Counter(r["emotion"] for r in rows).items())),
        "sample_rate": settings["sample_rate"],
        # Which engine made which speakers (one engine for now, so all of them).
        "engines": {f"{engine} (espeakng-loader {engine_version})": speakers},
        "settings": settings,
        "cues_demo": measured_cues(),
    }


def write_card(card: dict, folder: Path) -> None:
    (folder / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    (folder / "card.md").write_text(render_markdown(card))


def render_markdown(card: dict) -> str:
    engines = "; ".join(f"{name}: {len(spk)} speakers" for name, spk in card["engines"].items())
    lines = [
        "# Corpus card: synth (generated)",
        "",
        "| | |",
        "|---|---|",
        f"| speakers | {card['speakers']} ({', '.join(f'{g}: {n}' for g, n in card['genders'].items())}) |",
        f"| utterances | {card['utterances']} |",
        f"| hours | {card['hours']} ({card['seconds_min']:.1f}-{card['seconds_max']:.1f} s each) |",
        f"| emotions | {', '.join(f'{e}: {n}' for e, n in card['emotions'].items())} |",
        f"| sample rate | {card['sample_rate']} Hz |",
        f"| engine | {engines} |",
        f"| generator | version {card['generator_version']}, seed {card['settings']['seed']} |",
        "",
        "Speech synthesized with espeak-ng (GPL-3.0) from per-speaker voice files, speaking rates, word",
        "habits and emotion-like styles, recorded through per-session channels with noise.",
    ]
    cues = card.get("cues_demo")
    if cues:
        lines += [
            "",
            f"## Identity cues (EER, demo preset, seed {cues['seed']}, measured by benchmarks/synth_generation.py)",
            "",
            cue_table(cues),
        ]
        wer = cues.get("whisper_tiny_en_wer")
        if wer:
            lines += [
                "",
                f"Whisper tiny.en (int8) reads the demo speech at {100 * wer['wer']:.1f} % WER "
                f"({wer['utterances']} utterances).",
            ]
    return "\n".join(lines) + "\n"


def cue_table(cues: dict) -> str:
    rows = ["| cue | trials | EER % |", "|---|---|---|"]
    rows += [f"| {c['cue']} | {c['trials']} | {100 * c['eer']:.1f} |" for c in cues["rows"]]
    return "\n".join(rows)
