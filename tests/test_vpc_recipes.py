"""The shipped VoicePrivacy recipes (experiments/vpc2024.yaml, vpc2026-track1.yaml) end to end, on a VPC root
written in the toolkit's layout: data/ from the small real recordings (vpeval.testing.vpc_tree) with a `_fast`
"submission", exp/ with tiny random-weight SpeechBrain folders where the recipes look for the released models
(vpeval_speechbrain.tiny, vpeval_speech.tiny). The numbers mean nothing; the wiring is what is tested: the
CLI validates the file with the user's variables, and a run writes the toolkit-style results_vpc.txt with the
lazy-informed (O-O, O-A) and semi-informed (A-A) rows per dataset and gender, and WER."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from vpeval.cli import main

ROOT = Path(__file__).resolve().parents[1]
VPC2024 = ROOT / "experiments" / "vpc2024.yaml"
VPC2026 = ROOT / "experiments" / "vpc2026-track1.yaml"
# The semi-informed training scaled down through the recipe's own variables (no code path of its own).
FAST = ["--var", "SUFFIX=_fast", "--var", "UTILITY=false", "--var", "EPOCHS=1", "--var", "BATCH=4", "--var", "CROP=0.5"]


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def vpc_root(tmp_path_factory) -> Path:
    """data/ and exp/ as the 2024 toolkit's 01_download_data_model.sh leaves them (tiny models)."""
    pytest.importorskip("speechbrain")
    pytest.importorskip("transformers")
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder
    from vpeval_speechbrain.tiny import write_ecapa_folder

    root = tmp_path_factory.mktemp("vpc2024")
    work = tmp_path_factory.mktemp("vpc2024-work")
    build_vpc_tree(root, suffix="_fast", train_per_speaker=6)
    exp = root / "exp"
    write_ecapa_folder(exp / "asv_pre_ecapa")
    asr = exp / "asr_pre_ctc_wav2vec2"
    tiny_encoder_asr_folder(work / "asr", folder=asr, hub=asr / "wav2vec2")
    tiny_emotion_folders(work / "ser", folds=2, models=exp / "ser_pre_sb")
    return root


@pytest.fixture(scope="module")
def ssl_root(tmp_path_factory) -> tuple[Path, Path]:
    """VPC 2026's root: the same data, exp/asv_ssl (two-stream ECAPA checkpoint) and a tiny WavLM folder."""
    pytest.importorskip("speechbrain")
    pytest.importorskip("transformers")
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_speech.tiny import tiny_encoder_asr_folder
    from vpeval_speechbrain.tiny import write_asv_ssl_folder

    root = tmp_path_factory.mktemp("vpc2026")
    work = tmp_path_factory.mktemp("vpc2026-work")
    build_vpc_tree(root, suffix="_fast", train_per_speaker=6)
    _, wavlm = write_asv_ssl_folder(root / "exp" / "asv_ssl", work / "wavlm")
    tiny_encoder_asr_folder(work / "asr", folder=root / "exp" / "asr", hub=root / "exp" / "asr" / "wav2vec2")
    return root, wavlm


def test_vpc2024_validates_and_names_what_is_missing(vpc_root, tmp_path):
    ok = cli("validate", str(VPC2024), "--var", f"VPC_ROOT={vpc_root}", *FAST)
    assert ok.exit_code == 0, ok.output
    # UTILITY=true also wants IEMOCAP_dev / IEMOCAP_test (the tree has none) and their spk2fold files.
    utility = cli("validate", str(VPC2024), "--var", f"VPC_ROOT={vpc_root}", "--var", "SUFFIX=_fast")
    assert utility.exit_code == 2
    assert "IEMOCAP_dev" in utility.output and "spk2fold" in utility.output
    # An empty root: every missing model folder in a sentence of its own, before anything loads.
    (tmp_path / "data").mkdir()
    empty = cli("validate", str(VPC2024), "--var", f"VPC_ROOT={tmp_path}", *FAST)
    assert empty.exit_code == 2
    for folder in ("asv_pre_ecapa", "asr_pre_ctc_wav2vec2"):
        assert folder in empty.output, empty.output


def test_vpc2026_track1_validates_on_a_tiny_asv_ssl_root(ssl_root):
    root, wavlm = ssl_root
    args = ["--var", f"VPC_ROOT={root}", "--var", f"SSL_MODEL={wavlm}", *FAST]
    ok = cli("validate", str(VPC2026), *args)
    assert ok.exit_code == 0, ok.output
    missing = cli("validate", str(VPC2026), "--var", f"VPC_ROOT={root}", *FAST)  # no WavLM-Large.pt in asv_ssl
    assert missing.exit_code == 2 and "WavLM-Large.pt" in missing.output, missing.output


def _rows(text: str, block: str) -> list[list[str]]:
    """The data lines of one `---- ... ----` block of results_vpc.txt, split into cells (index dropped)."""
    parts = re.split(r"^(---- .* ----)$", text, flags=re.M)
    for title, body in zip(parts[1::2], parts[2::2]):
        if block in title:
            return [line.split()[1:] for line in body.strip().splitlines()[1:]]
    raise AssertionError(f"no block {block!r} in\n{text}")


@pytest.mark.slow
def test_vpc2024_runs_end_to_end(vpc_root, tmp_path):
    """The whole 2024 evaluation on CPU: lazy-informed asv_eval (O-O, O-A), the semi-informed asv_anon trained
    on the anonymized train-clean-360 (A-A), EER per libri dev/test x f/m, and WER."""
    out = tmp_path / "run"
    result = cli(
        "--experiment", str(VPC2024), "--var", f"VPC_ROOT={vpc_root}", *FAST,
        "--cache", str(tmp_path / "cache"), "--output", str(out), "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = (out / "results_vpc.txt").read_text()
    lazy = _rows(text, "asv_eval")
    semi = _rows(text, "asv_anon")
    # vpeval scores every protocol with every attacker; the toolkit's rows are among them.
    for dataset in ("dev", "test"):
        for gender in ("f", "m"):
            got = {(r[3], r[4]) for r in lazy if r[0] == "libri" and r[1] == dataset and r[2] == gender}
            assert {("original", "original"), ("original", "anon")} <= got, text
            got = {(r[3], r[4]) for r in semi if r[0] == "libri" and r[1] == dataset and r[2] == gender}
            assert ("anon", "anon") in got, text
    assert all(0.0 <= float(r[-1]) <= 100.0 for r in lazy + semi)
    wer = _rows(text, "WER")
    assert {r[2] for r in wer} == {"original", "anon"} and all(float(r[-1]) >= 0 for r in wer), text
    assert "UAR" not in text  # UTILITY=false: uar switched off, not failed


@pytest.mark.slow
def test_vpc2026_track1_runs_end_to_end(ssl_root, tmp_path):
    root, wavlm = ssl_root
    out = tmp_path / "run"
    result = cli(
        "--experiment", str(VPC2026), "--var", f"VPC_ROOT={root}", "--var", f"SSL_MODEL={wavlm}", *FAST,
        "--cache", str(tmp_path / "cache"), "--output", str(out), "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = (out / "results_vpc.txt").read_text()
    lazy, semi = {("original", "original"), ("original", "anon")}, {("anon", "anon")}
    for block, sides in (("asv_ssl", lazy), ("asv_anon", semi)):
        rows = _rows(text, block)
        for dataset in ("dev", "test"):
            assert sides <= {(r[3], r[4]) for r in rows if r[1] == dataset}, text
