"""Score files: round trip, fast path, bad lines named by file:line, and the `vpeval metrics` function."""

import json

import numpy as np
import pytest

from vpeval.errors import DataError, MetricInputError, PluginError
from vpeval.metrics_cli import run_metrics_on_scores
from vpeval.scorefile import read_score_file, write_score_file
from vpeval.types import Scores


def example(n=200, genders=True, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 10, n)
    spk = np.array([f"spk{k}" for k in ids])
    targets = rng.random(n) < 0.3
    scores = rng.normal(size=n) + 2 * targets
    g = np.where(ids % 2 == 0, "f", "m") if genders else None
    return Scores(scores, targets, g, spk, None, spk, np.array([f"utt{i}" for i in range(n)]))


@pytest.mark.parametrize("genders", [True, False])
def test_round_trip_is_exact(tmp_path, genders):
    original = example(genders=genders)
    path = tmp_path / "scores.txt"
    write_score_file(path, original)
    back = read_score_file(path)
    np.testing.assert_array_equal(back.scores, original.scores)
    np.testing.assert_array_equal(back.targets, original.targets)
    np.testing.assert_array_equal(back.enroll_speakers, original.enroll_speakers)
    np.testing.assert_array_equal(back.test_ids.astype(str), original.test_ids)
    assert (back.genders is None) == (not genders)
    if genders:
        np.testing.assert_array_equal(back.genders, original.genders)


def test_reads_kaldi_lines_with_blank_lines_and_tabs(tmp_path):
    path = tmp_path / "scores"
    path.write_text("spkA\tuttA-1 1.5 target f\n\nspkA uttB-2 -0.25   nontarget f\nspkB uttB-2 3e-1 target m")
    s = read_score_file(path)
    assert s.scores.tolist() == [1.5, -0.25, 0.3]
    assert s.targets.tolist() == [True, False, True]
    assert s.genders.tolist() == ["f", "f", "m"]
    assert s.enroll_speakers.tolist() == ["spkA", "spkA", "spkB"]


@pytest.mark.parametrize(
    "bad_line,fragment",
    [
        ("spkA utt2 0.1 target m extra", "6 columns"),
        ("spkA utt2 high target", "not a number"),
        ("spkA utt2 0.1 same", "neither target nor nontarget"),
        ("spkA utt2 0.1 target x", "neither f nor m"),
        ("spkA utt2 nan target", "the score is nan"),
        ("spkA utt2 0.1 target", "4 columns where earlier lines have 5"),
    ],
)
def test_bad_line_is_named_with_file_and_number(tmp_path, bad_line, fragment):
    path = tmp_path / "scores.txt"
    path.write_text("spkA utt1 0.5 target f\nspkB utt1 0.2 nontarget f\n" + bad_line + "\nspkB utt3 0.0 nontarget m\n")
    with pytest.raises(DataError, match=fragment) as info:
        read_score_file(path)
    assert str(info.value).startswith(f"{path}:3: ")


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_score_file(tmp_path / "nope.txt")
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(DataError, match="no trials"):
        read_score_file(tmp_path / "empty.txt")


def test_metrics_on_a_score_file_table_and_json(tmp_path):
    path = tmp_path / "scores.txt"
    write_score_file(path, example(n=400))
    table = run_metrics_on_scores(str(path), None, False, 0)
    for name in ("eer-step", "eer-rocch", "min-dcf", "min-cllr", "cllr", "linkability"):
        assert name in table
    rows = json.loads(run_metrics_on_scores(str(path), ["eer-step", "min-cllr"], True, 20))
    assert {r["metric"] for r in rows} == {"eer-step", "min-cllr"}
    assert {r["gender"] for r in rows} == {"f", "m", "avg", "all"}
    assert all(r["ci_low"] is not None and r["ci_low"] <= r["value"] <= r["ci_high"] for r in rows)


def test_metrics_cli_refuses_unknown_and_non_score_metrics(tmp_path):
    path = tmp_path / "scores.txt"
    write_score_file(path, example())
    with pytest.raises(PluginError, match="eer-step"):
        run_metrics_on_scores(str(path), ["eer-stpe"], False, 0)
    with pytest.raises(MetricInputError, match="cannot run on a score file"):
        run_metrics_on_scores(str(path), ["gvd"], False, 0)
