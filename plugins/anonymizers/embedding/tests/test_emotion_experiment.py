"""experiments/emotion-embedding.yaml end to end (slow: about 5 min from an empty cache on 2 cores).

Seed 003's claim in embedding space: emotion compensation with an audio emotion indicator gives back
the emotion OHNN keeps hidden from a speaker-independent classifier, and OHNN hides the speaker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.slow
def test_compensation_raises_embedding_uar_over_ohnn(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "vpeval",
            "--experiment",
            str(ROOT / "experiments/emotion-embedding.yaml"),
            "--cache",
            str(tmp_path / "cache"),
            "--output",
            str(tmp_path / "run"),
            "--quiet",
        ],
        check=True,
        env=env,
        cwd=ROOT,
    )
    rows = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]

    def uar(system, split):
        (value,) = [
            r["value"]
            for r in rows
            if r["metric"] == "embedding-uar" and r["details"]["system"] == system and r["details"]["split"] == split
        ]
        return value

    assert uar("+ OHNN + EC", "speaker") > uar("+ OHNN", "speaker") + 10
    assert uar("+ OHNN + EC", "utterance") > uar("+ OHNN", "utterance")
    indicator = [r["value"] for r in rows if r["metric"] == "emotion-indicator-uar"]
    assert indicator and min(indicator) > 50  # chance: 25
    (oa,) = {
        r["value"]
        for r in rows
        if r["metric"] == "embedding-eer" and r["details"]["system"] == "+ OHNN" and r["details"]["protocol"] == "O-A"
    }
    (oo,) = {r["value"] for r in rows if r["metric"] == "embedding-eer" and r["details"]["protocol"] == "O-O"}
    assert oa > oo + 30
