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

import tempfile
from pathlib import Path

from vpc_toolkit_reference_common import load_test_module, toolkit_arguments, write_fixture  # scripts/


def main() -> None:
    args = toolkit_arguments(__doc__.splitlines()[0]).parse_args()
    tests = load_test_module("test_vpc_toolkit_training")
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
    write_fixture(tests.FIXTURE, record)


if __name__ == "__main__":
    main()
