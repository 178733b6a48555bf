"""Records what the VoicePrivacy 2024 toolkit's own evaluate_asr and evaluate_ser compute on
tests/test_vpc_toolkit_evaluation.py's tiny tree, as tests/data/vpc_toolkit_evaluation.json.

    PYTHONPATH=<a folder holding pandas> .venv/bin/python scripts/vpc_toolkit_evaluation_reference.py \
        <Voice-Privacy-Challenge-2024 checkout> [--commit 400de3a]

The toolkit's code is run from the checkout, never copied here; pandas (which its utils import) is the one
package vpeval does not install.
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
    spec = importlib.util.spec_from_file_location("vpc_eval", ROOT / "tests" / "test_vpc_toolkit_evaluation.py")
    tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tests)
    work = Path(tempfile.mkdtemp(prefix="vpc-toolkit-eval-"))
    tree = tests.build_tree(work / "tree")
    outputs = tests.toolkit_outputs(args.toolkit.resolve(), tree, work / "toolkit")
    record = {
        "toolkit": "Voice-Privacy-Challenge/Voice-Privacy-Challenge-2024",
        "commit": args.commit,
        "code": [
            "evaluation/utility/asr/evaluate_asr.py asr_eval_speechbrain (eval_batchsize 1, cpu)",
            "evaluation/utility/ser/evaluate_ser.py evaluate_ser (classify_batch's labels recorded per utterance)",
        ],
        "made_by": "scripts/vpc_toolkit_evaluation_reference.py",
        **outputs,
    }
    tests.FIXTURE.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {tests.FIXTURE}")


if __name__ == "__main__":
    main()
