"""Records what the VoicePrivacy 2024 toolkit's own semi-informed training does on
tests/test_vpc_toolkit_training.py's tiny tree (tests/data/vpc_toolkit_training.json): the crops its
DataLoader read per batch, its labels, losses and learning rates, prepare_csv's segments per file, and how far
each weight tensor moved.

    PYTHONPATH=<a folder holding pandas> .venv/bin/python scripts/vpc_toolkit_training_reference.py \
        <Voice-Privacy-Challenge-2024 checkout> [--commit 400de3a]

The toolkit's code is run from the checkout, never copied here; pandas (its utils import it) is a package
vpeval does not install.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("toolkit", type=Path, help="a checkout of Voice-Privacy-Challenge-2024")
    parser.add_argument("--commit", default="400de3a", help="the checkout's commit, written into the fixture")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("vpc_training", ROOT / "tests" / "test_vpc_toolkit_training.py")
    tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tests)
    work = Path(tempfile.mkdtemp(prefix="vpc-toolkit-training-"))
    folder = tests.build_train_folder(work / "tree")
    run = tests.toolkit_training(args.toolkit.resolve(), folder, work / "toolkit")
    record = {
        "toolkit": "Voice-Privacy-Challenge/Voice-Privacy-Challenge-2024",
        "commit": args.commit,
        "code": [
            "evaluation/privacy/asv/asv_train/train_speaker_embeddings.py train_asv_speaker_embeddings (run_opts "
            "device cpu, python random seeded 0)",
            tests.HPARAMS + " with the overrides below",
        ],
        "overrides": {
            "channels": list(tests.CHANNELS),
            "lin_neurons": tests.DIM,
            "number_of_epochs": tests.EPOCHS,
            "batch_size": tests.BATCH,
            "sentence_len": tests.CROP,
            "step_size": tests.STEP_SIZE,
            "lr": tests.LR,
            "out_n_neurons": tests.SPEAKERS,
            "num_workers": 0,
        },
        "made_by": "scripts/vpc_toolkit_training_reference.py",
        "batches": run["batches"],
        "losses": run["losses"],
        "lrs": run["lrs"],
        "chunks": run["chunks"],
        "label_encoder": run["label_encoder"],
        "motion": tests.motion(run["initial"]["embedding_model"], run["final"]["embedding_model"]),
    }
    tests.FIXTURE.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {tests.FIXTURE}")


if __name__ == "__main__":
    main()
