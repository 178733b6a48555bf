"""The shipped VoicePrivacy recipes (experiments/vpc2024.yaml, vpc2026-track1.yaml) end to end, on a VPC root
written in the current toolkit's layout: data/ from the small real recordings (vpeval.testing.vpc_tree) with a
`_fast` "submission", exp/ with tiny random-weight SpeechBrain folders where the toolkit puts the released models
(exp/asv_orig/CKPT+1, exp/asr, exp/ser; vpeval_speechbrain.tiny, vpeval_speech.tiny). The numbers mean
nothing; the wiring is what is tested: the CLI validates the file with the user's variables, and a run writes
the toolkit's results_orig.txt / results_anon.txt and vpeval's results_vpc.txt with the
lazy-informed (O-O, O-A) and semi-informed (A-A) rows per dataset and gender, WER, and UAR where IEMOCAP
folders are given (UTILITY=true; with UTILITY=false the uar metric is switched off, not failing). The runs
are slow (about a minute each on 2 busy cores); validation stays in the default run."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from vpeval.cli import main

ROOT = Path(__file__).resolve().parents[1]
VPC2024 = ROOT / "experiments" / "vpc2024.yaml"
VPC2026 = ROOT / "experiments" / "vpc2026-track1.yaml"
# The semi-informed training scaled down through the recipe's own variables (no code path of its own).
FAST = ["--var", "SUFFIX=_fast", "--var", "UTILITY=false", "--var", "EPOCHS=1", "--var", "BATCH=4", "--var", "CROP=0.3"]


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
    write_ecapa_folder(exp / "asv_orig" / "CKPT+1")  # the toolkit's layout: the model in a CKPT+<N> folder
    asr = exp / "asr"
    tiny_encoder_asr_folder(work / "asr", folder=asr, hub=asr / "wav2vec2")
    tiny_emotion_folders(work / "ser", folds=2, models=exp / "ser")
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
    for folder in ("asv_orig", "exp/asr"):
        assert folder in empty.output, empty.output


def test_vpc2024_finds_the_older_model_folder_names_with_a_note(vpc_root, tmp_path, caplog):
    (tmp_path / "data").symlink_to(vpc_root / "data", target_is_directory=True)
    for new, old in (("asv_orig", "asv_pre_ecapa"), ("asr", "asr_pre_ctc_wav2vec2"), ("ser", "ser_pre_sb")):
        (tmp_path / "exp").mkdir(exist_ok=True)
        (tmp_path / "exp" / old).symlink_to(vpc_root / "exp" / new, target_is_directory=True)
    ok = cli("validate", str(VPC2024), "--var", f"VPC_ROOT={tmp_path}", *FAST)
    assert ok.exit_code == 0, ok.output
    notes = [r.getMessage() for r in caplog.records if "the alternative the file gives" in r.getMessage()]
    assert len(notes) == 3 and any("asv_pre_ecapa" in line and "exp/asv_orig does not exist" in line for line in notes)


def test_vpc2026_track1_validates_on_a_tiny_asv_ssl_root(ssl_root):
    root, wavlm = ssl_root
    args = ["--var", f"VPC_ROOT={root}", "--var", f"SSL_MODEL={wavlm}", *FAST]
    ok = cli("validate", str(VPC2026), *args)
    assert ok.exit_code == 0, ok.output
    missing = cli("validate", str(VPC2026), "--var", f"VPC_ROOT={root}", *FAST)  # no WavLM-Large.pt in asv_ssl
    assert missing.exit_code == 2 and "WavLM-Large.pt" in missing.output, missing.output


def with_iemocap(vpc_root: Path, root: Path, suffix: str = "_fast") -> Path:
    """A copy of the VPC root with IEMOCAP_dev / IEMOCAP_test stand-ins (vpeval.testing.vpc_tree.add_iemocap);
    exp/ is the same."""
    import shutil

    from vpeval.testing.vpc_tree import add_iemocap

    shutil.copytree(vpc_root / "data", root / "data")
    (root / "exp").symlink_to(vpc_root / "exp", target_is_directory=True)
    add_iemocap(root / "data", suffix)
    return root


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
    on the anonymized train-clean-360 (A-A), EER per libri dev/test x f/m, WER, and (UTILITY=true, IEMOCAP
    folders added) UAR from the per-fold SER models."""
    root = with_iemocap(vpc_root, tmp_path / "vpc")
    out = tmp_path / "run"
    utility = [a if a != "UTILITY=false" else "UTILITY=true" for a in FAST]
    ok = cli("validate", str(VPC2024), "--var", f"VPC_ROOT={root}", *utility)
    assert ok.exit_code == 0, ok.output
    result = cli(
        "--experiment", str(VPC2024), "--var", f"VPC_ROOT={root}", *utility,
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
    uar = _rows(text, "UAR")
    assert {r[2] for r in uar} == {"original", "anon"} and all(0 <= float(r[-1]) <= 100 for r in uar), text
    # The toolkit's own files: O-O of asv_eval per f/m folder (index 0, 3, 6, 9), A-A of asv_anon (2, 5, 8, 11).
    orig = (out / "results_summary" / "eval_orig_fast" / "results_orig.txt").read_text().splitlines()
    anon = (out / "results_summary" / "eval_anon_fast" / "results_anon.txt").read_text().splitlines()
    # UTILITY=true: the SER block first (evaluate_ser's means per IEMOCAP split and speech, two header rows)
    assert orig[2] == "---- SER results ----" and orig[3].split()[:4] == ["dataset", "split", "ser", "UAR"]
    assert [line.split()[:4] for line in orig[5:9]] == [
        [str(i), "IEMOCAP", s, c] for i, (s, c) in enumerate(itertools.product(("dev", "test"), ("anon", "original")))
    ]
    assert orig[9] == "" and all(0 <= float(line.split()[4]) <= 100 for line in orig[5:9])
    orig = orig[:2] + orig[10:]  # the rest as without utility
    assert orig[2] == "---- ASV_eval results ----" and anon[2] == "---- ASV_eval^anon results ----"
    assert [line.split()[:6] for line in orig[4:8]] == [
        [i, "libri", s, g, "original", "original"]
        for i, s, g in (("0", "dev", "f"), ("3", "dev", "m"), ("6", "test", "f"), ("9", "test", "m"))
    ]
    assert [line.split()[0] for line in anon[4:]] == ["2", "5", "8", "11"]
    assert orig[9] == "---- ASR results ----" and [line.split()[:4] for line in orig[11:]] == [
        ["0", "libri", "dev", "original"], ["4", "libri", "dev", "anon"], ["1", "libri", "test", "original"],
        ["5", "libri", "test", "anon"],
    ]  # fmt: skip


@pytest.mark.slow
def test_vpc2026_track1_runs_end_to_end(ssl_root, tmp_path):
    root, wavlm = ssl_root
    out = tmp_path / "run"
    # l2, not the recipe's toolkit-sign: in a toolkit-sign run on these tiny random networks asv_anon, fine-tuned for
    # one epoch, gave every libri_dev f-trial utterance and its enrollment one sign pattern (all 36 scores 1), which
    # eer refuses; tests/test_vpc_toolkit_asv_ssl.py compares toolkit-sign with the toolkit, the vpc report's tests
    # its label.
    result = cli(
        "--experiment", str(VPC2026), "--var", f"VPC_ROOT={root}", "--var", f"SSL_MODEL={wavlm}", *FAST,
        "--var", "ASV_EMBEDDINGS=l2", "--cache", str(tmp_path / "cache"), "--output", str(out), "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = (out / "results_vpc.txt").read_text()
    assert "UAR" not in text  # UTILITY=false: uar switched off, not failed
    lazy, semi = {("original", "original"), ("original", "anon")}, {("anon", "anon")}
    for part, title in (("orig", "ASV_eval"), ("anon", "ASV_eval^anon")):  # the toolkit's: A-A of the mixed lists
        lines = (out / "results_summary" / f"eval_{part}_fast" / f"results_{part}.txt").read_text().splitlines()
        assert lines[2] == f"---- {title} results ----"
        assert [line.split()[:6] for line in lines[4:6]] == [
            ["2", "libri", "dev", "mixed", "anon", "anon"], ["5", "libri", "test", "mixed", "anon", "anon"]
        ]  # fmt: skip
        assert len(lines) == (13 if part == "orig" else 6)  # orig: the ASR block of the mixed trial folders too
    for block, sides in (("asv_ssl", lazy), ("asv_anon", semi)):
        rows = _rows(text, block)
        for dataset in ("dev", "test"):
            assert sides <= {(r[3], r[4]) for r in rows if r[1] == dataset}, text
