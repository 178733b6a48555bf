"""The VPC 2026 Track 2 results files (issue 41, item 5) against the toolkit's own: data/vpc2026_track2/ holds the
files the toolkit at e6810a4 writes for inputs.json's numbers (its save_result_summary and pandas, README.md there)
and its published result_for_rank_BM1. vpeval's rows carrying the same numbers must give the same files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from vpeval_vpc_report.report import VpcReport
from vpeval_vpc_report.track2 import track2_summaries

DATA = Path(__file__).parent / "data" / "vpc2026_track2"
INPUTS = json.loads((DATA / "inputs.json").read_text())
TOOLKIT = DATA / "toolkit-e6810a4"
NOISE = 3e-5  # vpeval's values are unrounded: the files round to 3 decimals as the toolkit does
PROTOCOLS = ("O-O", "O-A", "A-A")


def _eer_rows(sets: dict, attacker: str, scenario: str) -> list[dict]:
    rows = []
    for dataset, values in sets.items():
        for protocol, value in zip(PROTOCOLS, values, strict=True):
            base = {"metric": "eer", "anonymizer": "BM1", "attacker": attacker, "scenario": scenario,
                    "protocol": protocol, "n": 1}  # fmt: skip
            rows.append({**base, "dataset": dataset, "gender": "all", "value": value + NOISE})
            rows.append({**base, "dataset": dataset, "gender": "f", "value": 49.0})  # vpeval's own gender split
            rows.append({**base, "gender": "all", "value": 48.0})  # vpeval's pooled row (no dataset)
    return rows


def vpeval_rows(langs=("en", "de", "fr", "es"), semi="asv_anon_{lang}") -> list[dict]:
    """The rows a vpeval run of experiments/vpc2026-track2.yaml gives for inputs.json's numbers."""
    pre = {d: v for d, v in INPUTS["asv_pre"].items() if d.split("_")[0] in langs}
    rows = _eer_rows(pre, "asv_ssl", "original")
    for lang in langs:
        rows += _eer_rows(INPUTS["asv_post"][lang]["sets"], semi.format(lang=lang), "anonymized")
    for dataset, values in INPUTS["asr"].items():
        if dataset.split("_")[0] in langs:
            for speech, value in zip(("original", "BM1"), values, strict=True):
                details = {"dataset": f"{dataset}_trials_mixed", "reference_words": 1000}
                rows.append(
                    {"metric": "wer", "anonymizer": speech, "gender": "all", "value": value, "details": details}
                )
    rows.append({"metric": "wer", "anonymizer": "original", "gender": "all", "value": 9.0, "details": {}})  # pooled
    for r in INPUTS["ser"]:
        speech = "original" if r["speech"] == "original" else "BM1"
        details = {"dataset": r["set"], "per_class_accuracy": {k: v + NOISE for k, v in r["ACC"].items()}}
        rows.append({"metric": "uar", "anonymizer": speech, "gender": "all", "value": r["UAR"], "details": details})
    return rows


def experiment(langs=("en", "de", "fr", "es")):
    attackers = [SimpleNamespace(label="asv_ssl", plugin=SimpleNamespace(params={"epochs": None}))]
    attackers += [
        SimpleNamespace(
            label=f"asv_anon_{lang}", plugin=SimpleNamespace(params={"epochs": INPUTS["asv_post"][lang]["epochs"]})
        )
        for lang in langs
    ]
    return SimpleNamespace(
        corpus=SimpleNamespace(params={"challenge": "2026-track2"}),
        anonymizers=[SimpleNamespace(label="BM1", steps=[SimpleNamespace(params={"vpc": {"suffix": "_BM1"}})])],
        attackers=attackers,
        experiment=SimpleNamespace(report=SimpleNamespace(preset="vpc")),
    )


def test_every_file_is_the_toolkits_byte_for_byte():
    files = track2_summaries(experiment(), vpeval_rows(), INPUTS["time"])
    expected = {str(p.relative_to(TOOLKIT / "exp")): p.read_text() for p in TOOLKIT.rglob("*") if p.is_file()}
    assert set(files) == set(expected)
    for path, text in expected.items():
        assert files[path] == text, path


def test_the_ranked_file_reads_as_the_published_one():
    """The published result_for_rank_BM1: its orig part byte for byte; its ASV_eval^anon blocks (written without
    the index column, README.md) cell for cell after the index."""
    mine = track2_summaries(experiment(), vpeval_rows(), INPUTS["time"])["results_summary/track2/result_for_rank_BM1"]
    published = (DATA / "published-e6810a4-result_for_rank_BM1").read_text()
    cut = published.index("---- Time:", 1)
    assert mine[:cut] == published[:cut]
    mine_posts, published_posts = mine[cut:].split("---- Time:"), published[cut:].split("---- Time:")
    assert len(mine_posts) == len(published_posts) == 5  # en, de, es, fr
    for ours, theirs in zip(mine_posts[1:], published_posts[1:], strict=True):
        ours_cells = [line.split() for line in ours.splitlines()[3:] if line.strip()]
        theirs_cells = [line.split() for line in theirs.splitlines()[3:] if line.strip()]
        assert ours_cells[0] == theirs_cells[0]  # the header line: no index name either way
        assert [cells[1:] for cells in ours_cells[1:]] == theirs_cells[1:]


def test_one_language_numbers_its_rows_as_the_toolkit_run_on_that_language():
    """A German-only run: eval_pre's rows for de_dev / de_test only (evaluate_asv numbers them 0-5, evaluate_asr
    0-3), one eval_anon_10_de file, and result_for_rank holding just those."""
    files = track2_summaries(experiment(("de",)), vpeval_rows(("de",)), INPUTS["time"])
    assert set(files) == {
        "results_summary/eval_orig_BM1/results_orig.txt",
        "results_summary/track2/eval_anon_10_de_BM1/results_anon.txt",
        "results_summary/track2/result_for_rank_BM1",
        "results_summary/track2/asr_results_BM1.csv",
        "results_summary/track2/ser_results_BM1.csv",
        "results_summary/track2/asv_results_BM1.csv",
    }
    orig = files["results_summary/eval_orig_BM1/results_orig.txt"]
    asv = orig.split("---- ASV_eval results ----\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in asv[1:]] == ["2", "5"]
    assert asv[1].split()[1:] == ["de", "dev", "mixed", "anon", "anon", "8.309"]
    asr = orig.split("---- ASR results ----\n")[1].splitlines()
    assert [line.split()[:4] for line in asr[1:]] == [
        ["0", "de", "dev", "original"], ["2", "de", "dev", "anon"], ["1", "de", "test", "original"],
        ["3", "de", "test", "anon"],
    ]  # fmt: skip
    csv = files["results_summary/track2/asv_results_BM1.csv"].splitlines()
    assert csv[0] == ",dataset,split,gender,enrollment,trial,EER" and len(csv) == 7
    assert files["results_summary/track2/result_for_rank_BM1"] == (
        orig + "\n" + files["results_summary/track2/eval_anon_10_de_BM1/results_anon.txt"] + "\n"
    )


def test_the_report_writes_track2_files_and_not_track1s():
    sections = VpcReport.__new__(VpcReport).run_outputs(experiment(("de",)), vpeval_rows(("de",)))
    paths = [path for path, _ in sections.files]
    assert "results_vpc.txt" in paths and "results_summary/track2/result_for_rank_BM1" in paths
    assert not any(p.startswith("results_summary/eval_anon") for p in paths)  # Track 1's layout


def test_four_one_language_runs_merge_into_the_toolkits_files(tmp_path):
    """experiments/vpc2026-track2.yaml run once per language (each run's semi-informed attacker is `asv_anon`):
    track2_merge reads the four run folders and writes the toolkit's files for all of them, byte for byte."""
    import yaml

    from vpeval_vpc_report.track2_merge import main

    runs = []
    for lang in ("fr", "en", "es", "de"):  # any order: the files follow the toolkit's
        folder = tmp_path / f"run-{lang}"
        folder.mkdir()
        resolved = {
            "data": {"corpus": {"params": {"challenge": "2026-track2", "datasets": [f"{lang}_dev", f"{lang}_test"]}}},
            "anonymizers": [{"label": "BM1", "chain": [{"use": "precomputed", "params": {"vpc": {"suffix": "_BM1"}}}]}],
            "attackers": [
                {"label": "asv_ssl", "use": "speechbrain", "params": {}, "train_on": "original"},
                {"label": "asv_anon", "use": "speechbrain-train", "train_on": "anonymized",
                 "params": {"epochs": INPUTS["asv_post"][lang]["epochs"]}},
            ],
        }  # fmt: skip
        (folder / "resolved.yaml").write_text(yaml.safe_dump(resolved))
        (folder / "results.json").write_text(json.dumps({"rows": vpeval_rows((lang,), semi="asv_anon")}))
        runs.append(str(folder))
    main([*runs, "--output", str(tmp_path / "merged")])
    for path in (TOOLKIT / "exp").rglob("*"):
        if path.is_file():
            mine = (tmp_path / "merged" / path.relative_to(TOOLKIT / "exp")).read_text()
            expected = path.read_text().replace(INPUTS["time"], "TIME")
            assert re.sub(r"Time: \S+ ----", "Time: TIME ----", mine) == expected, path


def test_a_language_in_two_runs_is_refused(tmp_path):
    from vpeval_vpc_report.track2_merge import MergeError, merge

    run = (experiment(("de",)), vpeval_rows(("de",), semi="asv_anon"))
    run[0].attackers = [SimpleNamespace(label="asv_anon", train_on="anonymized", plugin=SimpleNamespace(params={}))]
    with pytest.raises(MergeError, match="Runs 1 and 2 both evaluate de; give one per language"):
        merge([run, run])


def test_a_folder_without_a_run_is_one_sentence(tmp_path, capsys):
    from vpeval_vpc_report.track2_merge import main

    with pytest.raises(SystemExit) as refused:
        main([str(tmp_path), "--output", str(tmp_path / "out")])
    assert refused.value.code == 2
    assert (
        capsys.readouterr().err == f"{tmp_path / 'resolved.yaml'} does not exist; give run folders of "
        "experiments/vpc2026-track2.yaml.\n"
    )
