"""The anonymizer contract suite on a dummy pool with the packaged GE2E encoder."""

import csv
import tempfile
from pathlib import Path

from vpeval.testing.contracts import AnonymizerContract
from vpeval.testing.dummies import make_corpus


def write_pool(folder: Path) -> str:
    corpus = make_corpus(folder, speakers=4, utterances=2, sample_rate=16000, seconds=1.5, seed=123, name="pool")
    manifest = folder / "pool.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "gender", "transcript", "emotion"])
        for u in corpus.utterances:
            writer.writerow([u.path, "pool-" + u.speaker, u.gender, u.transcript, u.emotion])
    return str(manifest)


POOL = {"use": "manifest", "params": {"path": write_pool(Path(tempfile.mkdtemp(prefix="vpeval-vecvc-")))}}


class TestVectorVCContract(AnonymizerContract):
    plugin_name = "vector-vc"
    params = {
        "pool": POOL,
        "anonymizer": "selection",
        "anonymizer_params": {"farthest": 2, "select": 2},
        "refine_steps": 1,
    }
