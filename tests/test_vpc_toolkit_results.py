"""The toolkit's own results files (issue 36, item 3): results_summary/eval_orig<suffix>/results_orig.txt and
eval_anon<suffix>/results_anon.txt with the SER, ASV and ASR blocks exactly as run_evaluation.py writes them (the
rows it keeps, its index numbers, order and pandas layout), compared with the toolkits' published result files:
tests/data/vpc_toolkit_results/, VPC 2024 commit 400de3a and VPC 2026 commit e6810a4 (results/.../
result_for_rank_mcadams, each the concatenation of a results_orig.txt and a results_anon.txt)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from vpeval_vpc_report.results import toolkit_summaries

DATA = Path(__file__).resolve().parent / "data" / "vpc_toolkit_results"
FILES = {
    "2024": DATA / "vpc2024-400de3a-result_for_rank_mcadams.txt",
    "2026-track1": DATA / "vpc2026-track1-e6810a4-result_for_rank_mcadams.txt",
}


def _block(text: str, title: str) -> str:
    """`---- <title> results ----` and its table, as the toolkit wrote it."""
    match = re.search(rf"^---- {re.escape(title)} results ----\n(.*?)(?:\n\n|\Z)", text, flags=re.M | re.S)
    assert match, title
    return f"---- {title} results ----\n{match.group(1).rstrip()}\n"


def _rows(table: str, attacker: str, scenario: str, mixed: bool) -> list[dict]:
    """vpeval result rows carrying the published EERs (all three protocols, so the filter is tested too)."""
    rows = []
    for line in table.splitlines()[2:]:  # the title and the header first
        _, dataset, split, gender, enrollment, trial, eer = line.split()
        protocol = {"original": "O", "anon": "A"}[enrollment] + "-" + {"original": "O", "anon": "A"}[trial]
        for other in ("O-O", "O-A", "A-A"):
            value = float(eer) if other == protocol else 99.0  # the rows the toolkit's file leaves out
            rows.append(
                {
                    "metric": "eer", "anonymizer": "mcadams", "attacker": attacker, "scenario": scenario,
                    "protocol": other, "dataset": f"{dataset}_{split}", "gender": "all" if mixed else gender,
                    "value": value,
                }
            )  # fmt: skip
            if mixed:
                rows.append({**rows[-1], "gender": "f", "value": 50.0})  # vpeval's own split of the mixed list
    return rows


def _wer_rows(table: str, folders: tuple[str, ...]) -> list[dict]:
    """`wer` rows per trial folder (its `sets`) whose errors add up to the published WER of each dataset."""
    rows = []
    for line in table.splitlines()[2:]:
        _, dataset, split, speech, wer = line.split()
        errors = round(float(wer) * 1000)  # of 100,000 reference words, split over the dataset's folders
        for n, folder in enumerate(folders):
            share = errors // len(folders) + (errors % len(folders) if n == 0 else 0)
            words = 100_000 // len(folders)
            rows.append(
                {
                    "metric": "wer", "anonymizer": "mcadams" if speech == "anon" else "original", "gender": "all",
                    "value": 100 * share / words,
                    "details": {"dataset": f"{dataset}_{split}{folder}", "reference_words": words},
                }
            )  # fmt: skip
    return rows


def _uar_rows(table: str) -> list[dict]:
    """`uar` rows per IEMOCAP split (the speechbrain evaluator's spk2fold folders) carrying the published means,
    their ACC column order the published one (the toolkit's last fold row's, vpeval_speech.ser_folds)."""
    lines = table.splitlines()
    emotions = [name.removeprefix("ACC_") for name in lines[1].split()[4:]]
    rows = []
    for line in lines[3:]:  # the title and the two header rows first
        _, dataset, split, speech, uar, *accuracies = line.split()
        details = {
            "dataset": f"{dataset}_{split}",
            "speech": "original" if speech == "original" else "anonymized",
            # one fold row with every emotion: the 2026 file's ACC columns are those of all its fold rows
            "fold_rows": [
                {"speaker": "Ses01F", "fold": "1", "UAR": float(uar), "accuracy": dict.fromkeys(emotions, 0.0)}
            ],
            "per_class_accuracy": dict(zip(emotions, map(float, accuracies), strict=True)),
            "accuracy_order": emotions,
        }
        anonymizer = "mcadams" if speech == "anon" else "original"
        rows.append(
            {"metric": "uar", "anonymizer": anonymizer, "gender": "all", "value": float(uar), "details": details}
        )
    rows.append({**rows[0], "details": {"speech": "original"}, "value": 1.0})  # the pooled row: not in this block
    return rows


@pytest.mark.parametrize("challenge", ["2024", "2026-track1"])
def test_the_summaries_are_the_toolkits_files(challenge):
    published = FILES[challenge].read_text()
    mixed = challenge == "2026-track1"
    orig, anon = _block(published, "ASV_eval"), _block(published, "ASV_eval^anon")
    asr, ser = _block(published, "ASR"), _block(published, "SER")
    rows = _rows(orig, "asv_eval", "original", mixed) + _rows(anon, "asv_anon", "anonymized", mixed)
    rows += _uar_rows(ser)
    rows += _wer_rows(asr, ("_trials_mixed",) if mixed else ("_trials_f", "_trials_m"))
    exp = SimpleNamespace(
        corpus=SimpleNamespace(params={"challenge": challenge}),
        anonymizers=[SimpleNamespace(label="mcadams", steps=[SimpleNamespace(params={"vpc": {"suffix": "_mcadams"}})])],
    )
    files = toolkit_summaries(exp, rows, "03-03-26_05:17")
    assert set(files) == {
        "results_summary/eval_orig_mcadams/results_orig.txt",
        "results_summary/eval_anon_mcadams/results_anon.txt",
    }
    for part, block in (("orig", ser + "\n" + orig + "\n" + asr), ("anon", anon)):
        mine = files[f"results_summary/eval_{part}_mcadams/results_{part}.txt"]
        expected = f"---- Time: 03-03-26_05:17 ----\n\n{block}"
        # What a script splitting the lines on whitespace reads: the same cells, line by line.
        assert [line.split() for line in mine.splitlines()] == [line.split() for line in expected.splitlines()]
        if challenge == "2024":  # byte for byte; the 2026 file was edited by hand: its ASV_eval block's row 2 has
            assert mine == expected  # one space more than row 5, which DataFrame.to_string never writes
