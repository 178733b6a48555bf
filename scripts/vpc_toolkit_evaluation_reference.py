"""Records what the VoicePrivacy toolkits' own evaluation code computes on the tests' tiny trees:
the 2024 toolkit's evaluate_asr and evaluate_ser on tests/test_vpc_toolkit_evaluation.py's tree
(tests/data/vpc_toolkit_evaluation.json), and with --toolkit-2026 the 2026 toolkit's asv_ssl extraction on
tests/test_vpc_toolkit_asv_ssl.py's tree (tests/data/vpc_toolkit_asv_ssl.json).

    PYTHONPATH=<a folder holding pandas and pyloudnorm> .venv/bin/python scripts/vpc_toolkit_evaluation_reference.py \
        <Voice-Privacy-Challenge-2024 checkout> [--commit 400de3a] [--toolkit-2026 <checkout> --commit-2026 e6810a4]

The toolkits' code is run from the checkouts, never copied here; pandas and pyloudnorm (which they import)
are packages vpeval does not install.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from vpc_toolkit_reference_common import load_test_module, toolkit_arguments, write_fixture  # scripts/


def main() -> None:
    parser = toolkit_arguments(__doc__.splitlines()[0])
    parser.add_argument("--toolkit-2026", type=Path, help="a checkout of Voice-Privacy-Challenge-2026 (asv_ssl)")
    parser.add_argument("--commit-2026", default="e6810a4", help="that checkout's commit")
    args = parser.parse_args()
    if args.toolkit_2026:
        record_asv_ssl(args.toolkit_2026.resolve(), args.commit_2026)
    tests = load_test_module("test_vpc_toolkit_evaluation")
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
    write_fixture(tests.FIXTURE, record)


def record_asv_ssl(toolkit: Path, commit: str) -> None:
    tests = load_test_module("test_vpc_toolkit_asv_ssl")
    tree = tests.build_tree(Path(tempfile.mkdtemp(prefix="vpc-toolkit-ssl-")) / "tree")
    record = {
        "toolkit": "Voice-Privacy-Challenge/Voice-Privacy-Challenge-2026",
        "commit": commit,
        "code": [
            "evaluation/privacy/asv/speaker_extraction.py extraction_job's steps: torchaudio.load (its soundfile "
            "backend), utils.normalize_wave, speechbrain_vectors.SpeechBrainVectors('ecapa_ssl').extract_vector",
            "ECAPA_TDNN_test built with channels [16, 16, 16, 16, 48] and lin_neurons 12 (the tiny folder's sizes)",
            "network_outputs: ECAPA_TDNN_test's output before extract_vector's F.normalize(vec, dim=1)",
        ],
        "made_by": "scripts/vpc_toolkit_evaluation_reference.py --toolkit-2026",
        **tests.toolkit_embeddings(toolkit, tree),
    }
    write_fixture(tests.FIXTURE, record)


if __name__ == "__main__":
    main()
